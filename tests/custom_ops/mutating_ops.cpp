// tests/custom_ops/mutating_ops.cpp — custom ops that mutate their inputs, registered in C++ so both
// Python (torch.ops.load_library) and pt2diff (--load-library) can run them. After
// run_decompositions() their calls become auto_functionalized_v2 nodes (fixtures/mutating_custom_op*).
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

void scale_(at::Tensor& x, double s) { x.mul_(s); }

/// Mutates `x` and returns the column sums of the result.
at::Tensor scale_sum_(at::Tensor& x, double s) {
  x.mul_(s);
  return x.sum(0);
}

at::Tensor scale_sum_meta(at::Tensor& x, double) { return at::empty(x.sizes().slice(1), x.options()); }

void scale_meta(at::Tensor&, double) {}

}  // namespace

TORCH_LIBRARY(pt2diff_test, m) {
  m.def("scale_(Tensor(a!) x, float s) -> ()");
  m.def("scale_sum_(Tensor(a!) x, float s) -> Tensor");
}

TORCH_LIBRARY_IMPL(pt2diff_test, CompositeExplicitAutograd, m) {
  m.impl("scale_", scale_);
  m.impl("scale_sum_", scale_sum_);
}

TORCH_LIBRARY_IMPL(pt2diff_test, Meta, m) {
  m.impl("scale_", scale_meta);
  m.impl("scale_sum_", scale_sum_meta);
}
