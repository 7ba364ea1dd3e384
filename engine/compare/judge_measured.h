// engine/compare/judge_measured.h — judge() with the errors to fp64 its caller already measured.
#pragma once

#include <ATen/core/Tensor.h>
#include <optional>

#include "pt2diff/compare.h"

namespace pt2diff {

/// judge(result, eager, fp64, rule) where the caller has measured `result` and/or `eager` against this `fp64`
/// already (null: not measured, judge measures it). The verdict is judge()'s, without measuring a large value
/// again: a stage that reports the errors and judges the value (the kernel table, the outputs) paid three or four
/// passes over it for one. Only metrics measure() gives with the value's own ULPs count: see known_ulps().
Verdict judge_measured(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64, const ToleranceRule& rule,
                       const Metrics* result_to_fp64, const Metrics* eager_to_fp64);

/// `m` when it was measured (measure(value, fp64, ulp_dtype)) with the ULPs judge() measures in, those of the
/// value's own dtype `dtype`; null when `ulp_dtype` names another (a cast node's working precision).
inline const Metrics* known_ulps(const Metrics& m, std::optional<at::ScalarType> ulp_dtype, at::ScalarType dtype) {
  return !ulp_dtype || *ulp_dtype == dtype ? &m : nullptr;
}

}  // namespace pt2diff
