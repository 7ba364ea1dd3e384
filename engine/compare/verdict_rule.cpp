// engine/compare/verdict_rule.cpp — judge(): what every rule shares, around the rule of --rule (its own
// file under graphs/rules/, found in rule_registry.h): shapes and integer values compared
// exactly, the result's and eager's errors to fp64 measured once and handed to the rule with the allclose
// checks it may need, no fp64 value a failure (never a pass) for a rule that needs one, and on top of every
// rule the level (pass, suspicious, fail) and whether it can see a 1% error at this value's scale
// (docs/verdicts.md).
#include <ATen/ops/allclose.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/compare/judge_measured.h"
#include "graphs/rules/rule_registry.h"
#include "pt2diff/compare.h"
#include "pt2diff/error.h"
#include "pt2diff/graph.h"

namespace pt2diff {

namespace {

/// at::allclose(a.to(as), b.to(as), tol, tol, equal_nan) a chunk of elements at a time: isclose is
/// elementwise, so the answer is the same, without its temporaries (half a dozen of the values' size, a
/// 250 MiB float64 copy among them for a 32000-word head over 1024 tokens) all at once.
bool allclose_chunked(const at::Tensor& a, const at::Tensor& b, at::ScalarType as, double tol, bool equal_nan) {
  constexpr int64_t kChunk = int64_t{1} << 20;
  if (a.sizes() != b.sizes()) return at::allclose(a.to(as), b.to(as), tol, tol, equal_nan);
  const at::Tensor fa = a.contiguous().reshape(-1), fb = b.contiguous().reshape(-1);
  for (int64_t start = 0, n = fa.numel(); start < n; start += kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    if (!at::allclose(fa.narrow(0, start, len).to(as), fb.narrow(0, start, len).to(as), tol, tol, equal_nan)) return false;
  }
  return true;
}

}  // namespace

Verdict judge(const at::Tensor& result, const at::Tensor& eager, const at::Tensor& fp64, const ToleranceRule& rule) {
  return judge_measured(result, eager, fp64, rule, nullptr, nullptr);
}

Verdict judge_measured(const at::Tensor& result_anywhere, const at::Tensor& eager_anywhere, const at::Tensor& fp64,
                       const ToleranceRule& rule, const Metrics* result_to_fp64, const Metrics* eager_to_fp64) {
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
  std::optional<std::pair<Metrics, Metrics>> e;
  if (fp64.defined())
    e.emplace(result_to_fp64 ? *result_to_fp64 : measure(result, fp64), eager_to_fp64 ? *eager_to_fp64 : measure(eager, fp64));
  RuleEvidence evidence;
  if (e) {
    evidence.result = &e->first;
    evidence.eager = &e->second;
  }
  evidence.dtype = dtype_name(static_cast<DType>(dtype));
  evidence.low_precision = dtype == at::kHalf || dtype == at::kBFloat16;
  evidence.numel = eager.numel();
  evidence.allclose_to_eager = [&](double tol, bool equal_nan) {
    return allclose_chunked(result, eager, dtype, tol, equal_nan);
  };
  evidence.allclose_to_fp64 = [&](double tol, bool equal_nan) {
    return fp64.defined() && allclose_chunked(result, fp64, at::kDouble, tol, equal_nan);
  };
  const RuleKind& kind = rule_kind(rule.kind);
  if (e || kind.judges_without_fp64) {
    v = kind.judge(evidence, rule);
  } else {
    v.reason = "fp64_unavailable";
    v.detail = "no fp64 reference: failing rather than passing silently";
  }
  if (e) {
    v.rmse_result = e->first.rmse;
    v.rmse_eager = e->second.rmse;
    v.error_ratio = error_ratio(e->first, e->second);
    // A rule is blind where a 1% error hides under its tolerance; an all-zero or non-finite scale has no 1%.
    if (kind.blind_spot && e->first.ref_max_abs > 0 && std::isfinite(e->first.ref_max_abs)) kind.blind_spot(e->first, rule, v);
  }
  v.level = !v.pass ? Level::Fail
            : rule.suspicious_ratio > 0 && v.error_ratio >= rule.suspicious_ratio ? Level::Suspicious
                                                                                 : Level::Pass;
  return v;
}

}  // namespace pt2diff

