// pt2diff/compare.h — how far a value is from its fp64 reference, and whether a result passes.
//
//   pt2diff::Metrics m = pt2diff::measure(native_value, fp64_value);   // max abs/rel, RMSE, ULP, cosine, ...
//   pt2diff::Verdict v = pt2diff::judge(compiled, eager, fp64, pt2diff::ToleranceRule{});
//   if (!v.pass) std::cout << v.reason << ": " << v.detail << "\n";
//
// The types (Metrics, ToleranceRule, Verdict) are in verdict.h, which needs no torch.
#pragma once

#include <ATen/core/Tensor.h>
#include <optional>

#include "pt2diff/verdict.h"

namespace pt2diff {

/// Compares `value` (any dtype) to `reference` (same shape; usually float64). ULPs are measured in
/// `ulp_dtype` when given (a node's working precision: a bf16 → fp32 cast carries bf16 precision),
/// else in `value`'s dtype. Throws pt2diff::Error on a shape mismatch. The two may be on different
/// devices: `value` is compared on `reference`'s. On a GPU the metrics are reduced there
/// (measure_with_reductions): only a dozen numbers come back to the host, never the tensors.
Metrics measure(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype = std::nullopt);

/// The same metrics as measure() computed with ATen reductions on whatever device `reference` is on:
/// what measure() does on a GPU. On the CPU it agrees with measure()'s loop to the rounding of its sums
/// (RMSE and cosine; every other field exactly): tests/engine/compare checks that on the CPU.
Metrics measure_with_reductions(const at::Tensor& value, const at::Tensor& reference,
                                std::optional<at::ScalarType> ulp_dtype = std::nullopt);

/// Judges `result` against `eager` with `fp64` as the referee (undefined fp64 = unavailable: FAIL).
Verdict judge(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64, const ToleranceRule& rule);

}  // namespace pt2diff
