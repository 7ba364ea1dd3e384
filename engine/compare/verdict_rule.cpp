// engine/compare/verdict_rule.cpp — the same()-compatible rule (torch._dynamo.utils.same), with the
// minifier's one silent pass removed: no fp64 value is a failure, never a pass.
#include <ATen/ops/allclose.h>
#include <fmt/format.h>

#include "pt2diff/compare.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {
bool low_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

/// The fp64-only rules: the result alone against the reference, eager not consulted.
Verdict judge_against_fp64(const at::Tensor& result, const at::Tensor& fp64, const ToleranceRule& rule) {
  Verdict v;
  if (!fp64.defined()) {
    v.reason = "fp64_unavailable";
    v.detail = "no fp64 reference: failing rather than passing silently";
    return v;
  }
  const Metrics m = measure(result, fp64);
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
    case ToleranceRule::Kind::Same: break;
  }
  v.rmse_result = m.rmse;
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
    v.reason = v.pass ? "exact_match" : "exact_mismatch";
    v.detail = fmt::format("{} of {} elements differ", m.mismatches, m.numel);
    return v;
  }
  if (rule.kind != ToleranceRule::Kind::Same) return judge_against_fp64(result, fp64, rule);
  at::Tensor res = result.to(eager.scalar_type());
  if (at::allclose(res, eager, rule.tol, rule.tol, rule.equal_nan)) {
    v.pass = true;
    v.reason = "allclose";
    v.detail = fmt::format("allclose to eager at atol=rtol={}", rule.tol);
    return v;
  }
  if (!fp64.defined()) {
    v.reason = "fp64_unavailable";
    v.detail = "not allclose to eager and no fp64 reference to referee: failing rather than passing silently";
    return v;
  }
  Metrics to_ref = measure(result, fp64), eager_to_ref = measure(eager, fp64);
  if (eager_to_ref.nan > 0 && to_ref.nan == 0 && to_ref.ref_nan == 0) {
    // Eager went NaN where fp64 did not: the result is judged against fp64 alone.
    v.pass = at::allclose(result.to(at::kDouble), fp64, 0.04, 0.04, false);
    v.reason = v.pass ? "eager_nan_fp64_agrees" : "rmse_exceeds_bound";
    v.detail = fmt::format("eager has {} NaN, fp64 none; result {} allclose to fp64 at 0.04", eager_to_ref.nan, v.pass ? "is" : "is not");
    return v;
  }
  if (to_ref.nan > 0 && to_ref.ref_nan == 0) {
    v.reason = "nan_where_fp64_finite";
    v.detail = fmt::format("{} NaN in the result where fp64 is finite", to_ref.nan);
    return v;
  }
  double m = low_precision(dtype) || eager.numel() < 1000 ? rule.low_precision_multiplier : rule.fp32_multiplier;
  if (rule.small_tensor_multipliers) {
    if (eager.numel() <= 10) m = 10;
    else if (eager.numel() <= 500) m = 8;
  }
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

}  // namespace pt2diff
