// tests/engine/execution/reduction_orders_test.cpp — serial_sum_error(), the floor the node verdict
// gives a float32 sum (engine/diff/node_ratio.h): against real serial float32 loops over many draws of
// the terms, its estimate must be the expected error's scale (an upper estimate: it takes each
// addition's rounding error at its largest, u·|S|, where round-to-nearest's is u·2^floor(log2|S|)).
#include <gtest/gtest.h>

#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <cmath>

#include "../../test_support.h"
#include "engine/execution/reduction_orders.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(SerialSumError, IsTheScaleOfARealSerialLoopsError) {
  // fixtures/cond.pt2: sum_1 = aten.sum.default over all of x (the op whose floor this is).
  const Program p = load_program(testing::fixture("cond.pt2"));
  const Node& sum = node_named(p.ir.graph, "sum_1");
  at::manual_seed(7);
  double actual_sq = 0, estimate_sq = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    // Terms with a mean: partial sums grow, as in the cancelling sums where the floor matters.
    const at::Tensor x = at::randn({4, 8}, at::kFloat).add(0.3);
    const float* data = x.data_ptr<float>();
    float serial = 0;
    for (int64_t i = 0; i < x.numel(); ++i) serial += data[i];
    const double exact = x.to(at::kDouble).sum().item<double>();
    actual_sq += std::pow(static_cast<double>(serial) - exact, 2);
    const auto estimate = serial_sum_error(sum, x, std::ldexp(1.0, -24));
    ASSERT_TRUE(estimate.has_value());
    estimate_sq += *estimate * *estimate;
  }
  const double ratio = std::sqrt(actual_sq / estimate_sq);
  // u·2^floor(log2|S|) against u·|S|: sqrt(E[(2^e/|S|)^2]) = 0.74 for log-uniform mantissas; 400 draws.
  EXPECT_GT(ratio, 0.5) << "the estimate is far above real serial loops' error";
  EXPECT_LT(ratio, 1.0) << "real serial loops land farther from fp64 than the estimate";
}

TEST(SerialSumError, IsNothingForOtherOpsAndZeroForOneTerm) {
  const Program p = load_program(testing::fixture("cond.pt2"));
  EXPECT_FALSE(serial_sum_error(node_named(p.ir.graph, "linear"), at::zeros({4, 8}), 1e-7).has_value());
  EXPECT_EQ(serial_sum_error(node_named(p.ir.graph, "sum_1"), at::zeros({1}), 1e-7).value(), 0.0);
}

}  // namespace
}  // namespace pt2diff
