// engine/compare/verdict_rule.cpp — the same()-compatible rule (torch._dynamo.utils.same), with the
// minifier's one silent pass removed: no fp64 value is a failure, never a pass; the fp64-only rules;
// the scale-aware relative rule; and on top of every rule the level (pass, suspicious, fail) and
// whether the rule can see a 1% error at this value's scale (docs/verdicts.md).
#include <ATen/ops/allclose.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "pt2diff/compare.h"
#include "pt2diff/error.h"
#include "pt2diff/graph.h"

namespace pt2diff {

namespace {
bool low_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

/// The RMSE multiplier of the same() and relative rules for a value of this dtype and size.
double multiplier_for(const at::Tensor& eager, const ToleranceRule& rule) {
  double m = low_precision(eager.scalar_type()) || eager.numel() < 1000 ? rule.low_precision_multiplier : rule.fp32_multiplier;
  if (rule.small_tensor_multipliers) {
    if (eager.numel() <= 10) m = 10;
    else if (eager.numel() <= 500) m = 8;
  }
  return m;
}

/// The two errors every floating verdict is built on: the result's and eager's, against fp64.
struct ToFp64 {
  Metrics result, eager;
};

/// The fp64-only rules: the result alone against the reference, eager not consulted.
Verdict judge_against_fp64(const at::Tensor& result, const at::Tensor& fp64, const Metrics& m, const ToleranceRule& rule) {
  Verdict v;
  switch (rule.kind) {
    case ToleranceRule::Kind::Allclose:
      v.pass = at::allclose(result.to(at::kDouble), fp64.to(at::kDouble), rule.tol, rule.tol, rule.equal_nan);
      v.reason = v.pass ? "allclose_to_fp64" : "not_allclose_to_fp64";
      v.detail = fmt::format("max |result - fp64| = {:.3g} (max rel {:.3g}) {} atol=rtol={}", m.max_abs, m.max_rel,
                             v.pass ? "within" : "beyond", rule.tol);
      break;
    case ToleranceRule::Kind::Ulp:
      v.pass = m.nan == 0 && m.max_ulp <= rule.max_ulp;
      v.reason = v.pass ? "ulp_within_bound" : "ulp_exceeds_bound";
      v.bound = rule.max_ulp;
      v.detail = fmt::format("max ULP distance to fp64 {:.1f} {} {:g}{}", m.max_ulp, v.pass ? "<=" : ">", rule.max_ulp,
                             m.nan ? fmt::format(" ({} NaN)", m.nan) : "");
      break;
    case ToleranceRule::Kind::Cosine:
      v.pass = m.nan == 0 && m.cosine >= rule.min_cosine;
      v.reason = v.pass ? "cosine_within_bound" : "cosine_below_bound";
      v.bound = rule.min_cosine;
      v.detail = fmt::format("cosine similarity to fp64 {:.6f} {} {:g}", m.cosine, v.pass ? ">=" : "<", rule.min_cosine);
      break;
    case ToleranceRule::Kind::Same: case ToleranceRule::Kind::Relative: break;
  }
  v.rmse_result = m.rmse;
  return v;
}

/// x / scale, as relative_rmse() divides: 0 when both are 0, infinity when only the scale is.
double at_scale(double x, double scale) {
  if (scale > 0) return x / scale;
  return x == 0 ? 0 : std::numeric_limits<double>::infinity();
}

/// The relative rule: errors at the fp64 value's scale, the result's against eager's (bounded ratio) or
/// an absolute threshold per dtype, whichever is looser (Huawei's MERE < T and MARE < 10 T).
Verdict judge_relative(const at::Tensor& eager, const ToFp64& e, const ToleranceRule& rule) {
  Verdict v;
  const Metrics &r = e.result, &g = e.eager;
  if (r.nan > 0 && r.ref_nan == 0) {
    v.reason = "nan_where_fp64_finite";
    v.detail = fmt::format("{} NaN in the result where fp64 is finite", r.nan);
    return v;
  }
  const std::string dtype(dtype_name(static_cast<DType>(eager.scalar_type())));
  const double t = relative_threshold(dtype), m = multiplier_for(eager, rule);
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
      rel, mean_ok ? "<=" : ">", mean_bound, m, rel_eager, dtype, t, peak, peak_ok ? "<=" : ">", peak_bound);
  return v;
}

/// Why the same() or allclose rule cannot see a 1% error in this value (Verdict::blind_spot), if so.
void find_blind_spot(const Metrics& r, const ToleranceRule& rule, Verdict& v) {
  if (rule.kind != ToleranceRule::Kind::Same && rule.kind != ToleranceRule::Kind::Allclose) return;
  if (!(r.ref_max_abs > 0) || !std::isfinite(r.ref_max_abs)) return;  // all zero: no 1% to see
  // allclose (same()'s first step) passes x (1 + 0.01) wherever 0.01 |x| <= tol + tol |x|.
  if (rule.tol < 0.01 && r.ref_max_abs <= rule.tol / (0.01 - rule.tol)) {
    v.blind_spot = "atol_dominates";
    v.blind_detail = fmt::format("max |fp64| = {:.3g} <= tol / (0.01 - tol) = {:.3g}, so atol = {:g} hides a 1% error", r.ref_max_abs,
                                 rule.tol / (0.01 - rule.tol), rule.tol);
  } else if (rule.kind == ToleranceRule::Kind::Same && 0.01 * r.ref_rms <= rule.tol / 10) {
    v.blind_spot = "rmse_slack_dominates";
    v.blind_detail = fmt::format("1% of RMS(fp64) = {:.3g} <= the RMSE bound's absolute slack tol/10 = {:.3g}, which hides it",
                                 0.01 * r.ref_rms, rule.tol / 10);
  }
}

/// The same() rule, from its allclose step on: compiled against eager, fp64 as referee.
Verdict judge_same(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64, const std::optional<ToFp64>& e,
                   const ToleranceRule& rule) {
  Verdict v;
  at::Tensor res = result.to(eager.scalar_type());
  if (at::allclose(res, eager, rule.tol, rule.tol, rule.equal_nan)) {
    v.pass = true;
    v.reason = "allclose";
    v.detail = fmt::format("allclose to eager at atol=rtol={}", rule.tol);
    return v;
  }
  if (!e) {
    v.reason = "fp64_unavailable";
    v.detail = "not allclose to eager and no fp64 reference to referee: failing rather than passing silently";
    return v;
  }
  const Metrics &to_ref = e->result, &eager_to_ref = e->eager;
  if (eager_to_ref.nan > 0 && to_ref.nan == 0 && to_ref.ref_nan == 0) {
    // Eager went NaN where fp64 did not: the result is judged against fp64 alone.
    v.pass = at::allclose(result.to(at::kDouble), fp64.to(at::kDouble), 0.04, 0.04, false);
    v.reason = v.pass ? "eager_nan_fp64_agrees" : "rmse_exceeds_bound";
    v.detail = fmt::format("eager has {} NaN, fp64 none; result {} allclose to fp64 at 0.04", eager_to_ref.nan, v.pass ? "is" : "is not");
    return v;
  }
  if (to_ref.nan > 0 && to_ref.ref_nan == 0) {
    v.reason = "nan_where_fp64_finite";
    v.detail = fmt::format("{} NaN in the result where fp64 is finite", to_ref.nan);
    return v;
  }
  const double m = multiplier_for(eager, rule);
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
}  // namespace

Verdict judge(const at::Tensor& result_anywhere, const at::Tensor& eager_anywhere, const at::Tensor& fp64, const ToleranceRule& rule) {
  // One device for the comparisons: the referee's (a compiled value read back from a worker is on the
  // host, eager and fp64 may be on a GPU, or fp64 on the host beside a GPU eager).
  const c10::Device where = fp64.defined() ? fp64.device() : eager_anywhere.device();
  const at::Tensor result = result_anywhere.to(where), eager = eager_anywhere.to(where);
  Verdict v;
  if (result.sizes() != eager.sizes()) {
    v.reason = "shape_mismatch";
    v.detail = "result and eager shapes differ";
    return v;
  }
  const at::ScalarType dtype = eager.scalar_type();
  if (!at::isFloatingType(dtype) && !at::isComplexType(dtype)) {
    Metrics m = measure(result, eager);
    v.pass = m.mismatches == 0;
    v.level = v.pass ? Level::Pass : Level::Fail;
    v.reason = v.pass ? "exact_match" : "exact_mismatch";
    v.detail = fmt::format("{} of {} elements differ", m.mismatches, m.numel);
    return v;
  }
  // Both errors to fp64, for every rule: the level and the blind spot need them even when the rule does not.
  std::optional<ToFp64> e;
  if (fp64.defined()) e = ToFp64{measure(result, fp64), measure(eager, fp64)};
  if (rule.kind == ToleranceRule::Kind::Same) {
    v = judge_same(result, eager, fp64, e, rule);
  } else if (!e) {
    v.reason = "fp64_unavailable";
    v.detail = "no fp64 reference: failing rather than passing silently";
  } else if (rule.kind == ToleranceRule::Kind::Relative) {
    v = judge_relative(eager, *e, rule);
  } else {
    v = judge_against_fp64(result, fp64, e->result, rule);
  }
  if (e) {
    v.rmse_result = e->result.rmse;
    v.rmse_eager = e->eager.rmse;
    v.error_ratio = error_ratio(e->result, e->eager);
    find_blind_spot(e->result, rule, v);
  }
  v.level = !v.pass ? Level::Fail
            : rule.suspicious_ratio > 0 && v.error_ratio >= rule.suspicious_ratio ? Level::Suspicious
                                                                                 : Level::Pass;
  return v;
}

}  // namespace pt2diff

