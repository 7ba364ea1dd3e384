// tests/engine/numerics.h — comparisons of engine results with Python's expected outputs.
#pragma once

#include <ATen/core/Tensor.h>
#include <algorithm>

namespace pt2diff::testing {

/// max|got - want| / max|want|, in float64: the measure of the fp64 run's 1e-12 bound.
inline double relative_error(const at::Tensor& got, const at::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return got.to(at::kDouble).sub(want.to(at::kDouble)).abs().max().item<double>() / std::max(scale, 1e-300);
}

/// Root mean square of got - want, in float64.
inline double rmse(const at::Tensor& got, const at::Tensor& want) {
  return got.to(at::kDouble).sub(want.to(at::kDouble)).pow(2).mean().sqrt().item<double>();
}

}  // namespace pt2diff::testing
