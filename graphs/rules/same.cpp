// graphs/rules/same.cpp — the default rule, compatible with torch._dynamo.utils.same() (the
// accuracy minifier's): allclose to eager at tol, else RMSE(result, fp64) <= multiplier x RMSE(eager,
// fp64) + tol/10; with the minifier's one silent pass removed (no fp64 value to referee is a failure).
#include <cmath>
#include <fmt/format.h>

#include "graphs/rules/rule_registry.h"

namespace pt2diff {

namespace {
Verdict judge_same(const RuleEvidence& e, const ToleranceRule& rule) {
  Verdict v;
  if (e.allclose_to_eager(rule.tol, rule.equal_nan)) {
    v.pass = true;
    v.reason = "allclose";
    v.detail = fmt::format("allclose to eager at atol=rtol={}", rule.tol);
    return v;
  }
  if (!e.result) {
    v.reason = "fp64_unavailable";
    v.detail = "not allclose to eager and no fp64 reference to referee: failing rather than passing silently";
    return v;
  }
  const Metrics &to_ref = *e.result, &eager_to_ref = *e.eager;
  if (eager_to_ref.nan > 0 && to_ref.nan == 0 && to_ref.ref_nan == 0) {
    // Eager went NaN where fp64 did not: the result is judged against fp64 alone.
    v.pass = e.allclose_to_fp64(0.04, false);
    v.reason = v.pass ? "eager_nan_fp64_agrees" : "rmse_exceeds_bound";
    v.detail = fmt::format("eager has {} NaN, fp64 none; result {} allclose to fp64 at 0.04", eager_to_ref.nan, v.pass ? "is" : "is not");
    return v;
  }
  if (to_ref.nan > 0 && to_ref.ref_nan == 0) {
    v.reason = "nan_where_fp64_finite";
    v.detail = fmt::format("{} NaN in the result where fp64 is finite", to_ref.nan);
    return v;
  }
  const double m = rmse_multiplier(e, rule);
  v.rmse_result = to_ref.rmse;
  v.rmse_eager = eager_to_ref.rmse;
  v.multiplier = m;
  v.bound = m * eager_to_ref.rmse + rule.tol / 10;
  v.pass = to_ref.rmse <= v.bound;
  v.reason = v.pass ? "rmse_within_bound" : "rmse_exceeds_bound";
  v.detail = fmt::format("RMSE(result, fp64) = {:.3g} {} {:.3g} = {} x RMSE(eager, fp64) {:.3g} + tol/10", to_ref.rmse,
                         v.pass ? "<=" : ">", v.bound, m, eager_to_ref.rmse);
  return v;
}

/// allclose's atol first; else the RMSE bound's absolute slack tol/10, which hides a 1% error in a value
/// whose RMS is under 10 tol.
void same_blind_spot(const Metrics& r, const ToleranceRule& rule, Verdict& v) {
  if (atol_blind_spot(r, rule, v)) return;
  if (0.01 * r.ref_rms <= rule.tol / 10) {
    v.blind_spot = "rmse_slack_dominates";
    v.blind_detail = fmt::format("1% of RMS(fp64) = {:.3g} <= the RMSE bound's absolute slack tol/10 = {:.3g}, which hides it",
                                 0.01 * r.ref_rms, rule.tol / 10);
  }
}
}  // namespace

const RuleKind& same_rule() {
  static const RuleKind rule{
      ToleranceRule::Kind::Same, "same", "same", "same (torch._dynamo.utils.same, default)", nullptr,
      [](const ToleranceRule&) -> std::string { return "same"; },
      {"allclose", "rmse_within_bound", "rmse_exceeds_bound", "eager_nan_fp64_agrees", "nan_where_fp64_finite", "fp64_unavailable"},
      true, judge_same, true, same_blind_spot,
      [](const ToleranceRule& r) {
        return fmt::format("RMSE multipliers {:g} fp32, {:g} low precision", r.fp32_multiplier, r.low_precision_multiplier);
      },
      tol_plot_line};
  return rule;
}

}  // namespace pt2diff
