// graphs/rules/relative.cpp — --rule relative: errors at the fp64 value's scale, the result's
// against eager's (a bounded ratio) or an absolute threshold per dtype, whichever is looser (after
// Huawei Ascend's operator accuracy standard: MERE < T and MARE < 10 T; docs/verdicts.md).
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "graphs/rules/rule_registry.h"

namespace pt2diff {

double relative_threshold(const std::string& dtype) {
  // Huawei Ascend's operator accuracy standard, single-benchmark thresholds by output dtype (docs/verdicts.md).
  if (dtype == "float16" || dtype == "complex32") return std::ldexp(1.0, -10);
  if (dtype == "bfloat16") return std::ldexp(1.0, -7);
  if (dtype == "float8_e4m3fn" || dtype == "float8_e4m3fnuz") return std::ldexp(1.0, -3);
  if (dtype == "float8_e5m2" || dtype == "float8_e5m2fnuz") return std::ldexp(1.0, -2);
  if (dtype == "float64" || dtype == "complex128") return std::ldexp(1.0, -40);
  return std::ldexp(1.0, -13);  // float32, complex64
}

namespace {
/// x / scale, as relative_rmse() divides: 0 when both are 0, infinity when only the scale is.
double at_scale(double x, double scale) {
  if (scale > 0) return x / scale;
  return x == 0 ? 0 : std::numeric_limits<double>::infinity();
}

Verdict judge_relative(const RuleEvidence& e, const ToleranceRule& rule) {
  Verdict v;
  const Metrics &r = *e.result, &g = *e.eager;
  if (r.nan > 0 && r.ref_nan == 0) {
    v.reason = "nan_where_fp64_finite";
    v.detail = fmt::format("{} NaN in the result where fp64 is finite", r.nan);
    return v;
  }
  const double t = relative_threshold(e.dtype), m = rmse_multiplier(e, rule);
  // Eager NaN where fp64 is finite: eager's errors bound nothing, the thresholds alone judge.
  const bool eager_lost = g.nan > 0 && r.ref_nan == 0;
  const double rel = relative_rmse(r), rel_eager = eager_lost ? 0 : relative_rmse(g);
  const double peak = at_scale(r.max_abs, r.ref_rms), peak_eager = eager_lost ? 0 : at_scale(g.max_abs, g.ref_rms);
  const double mean_bound = std::max(m * rel_eager, t), peak_bound = std::max(10 * peak_eager, 10 * t);
  const bool mean_ok = rel <= mean_bound, peak_ok = peak <= peak_bound;
  v.pass = mean_ok && peak_ok;
  v.reason = v.pass ? "relative_within_bound" : !mean_ok ? "relative_rmse_exceeds_bound" : "relative_max_exceeds_bound";
  v.rmse_result = r.rmse;
  v.rmse_eager = g.rmse;
  v.multiplier = m;
  v.bound = mean_bound * r.ref_rms;  // as an RMSE, like the same() rule's bound
  v.detail = fmt::format(
      "RMSE / RMS(fp64) = {:.3g} {} {:.3g} = max({} x eager's {:.3g}, {} threshold {:.3g}); max |error| / RMS(fp64) = {:.3g} {} {:.3g}",
      rel, mean_ok ? "<=" : ">", mean_bound, m, rel_eager, e.dtype, t, peak, peak_ok ? "<=" : ">", peak_bound);
  return v;
}
}  // namespace

const RuleKind& relative_rule() {
  static const RuleKind rule{
      ToleranceRule::Kind::Relative, "relative", "relative",
      "relative (errors at the fp64 value's scale, against eager's and a threshold per dtype: docs/verdicts.md)", nullptr,
      [](const ToleranceRule&) -> std::string { return "relative"; },
      {"relative_within_bound", "relative_rmse_exceeds_bound", "relative_max_exceeds_bound", "nan_where_fp64_finite"},
      false, judge_relative, false, nullptr, nullptr, nullptr};
  return rule;
}

}  // namespace pt2diff
