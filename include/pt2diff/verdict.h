// pt2diff/verdict.h — the numbers a comparison gives and the rule that turns them into pass/fail,
// as plain data (no torch): results, reports and the localization search use these types alone.
// compare.h computes them from tensors.
//
//   pt2diff::ToleranceRule rule = pt2diff::parse_rule("ulp:4");   // --rule
//   std::cout << pt2diff::rule_name(rule) << "\n";                  // "ulp:4"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pt2diff {

/// Distance of a value to its reference (an fp64 value, or the same dtype for exact kinds).
struct Metrics {
  bool exact_kind = false;       ///< integer/bool values: only match counts are meaningful
  int64_t numel = 0;
  double max_abs = 0;            ///< max |x - ref|
  double max_rel = 0;            ///< max |x - ref| / |ref| over elements with ref != 0
  double rmse = 0;               ///< sqrt(mean((x - ref)^2))
  double max_ulp = 0;            ///< max |x - ref| in units in the last place of x's own dtype at ref
  double cosine = 1;             ///< <x, ref> / (|x| |ref|); 1 when both are zero
  int64_t nan = 0, inf = 0;      ///< non-finite elements of x
  int64_t ref_nan = 0, ref_inf = 0;
  int64_t mismatches = 0;        ///< elements not equal to the reference (exact kinds), or with |x - ref| > 0
  std::vector<int64_t> worst_index;  ///< index of the element with the largest |x - ref|
  double worst_value = 0, worst_reference = 0;
  double ref_rms = 0;            ///< sqrt(mean(ref^2)) over elements where both are finite: the value's scale
  double ref_max_abs = 0;        ///< max |ref| over finite elements
  /// Unit roundoff 2^-(mantissa bits + 1) of the dtype ULPs are measured in (fp32 5.96e-08): the
  /// error of rounding the fp64 value to that dtype is at most this times |ref|, element by element.
  double unit_roundoff = 0;
};

/// RMSE relative to the reference's RMS, RMSE(x, fp64) / RMS(fp64): an error at the value's scale (a
/// 1% error in every element gives 0.01 whatever the magnitude). 0 when both are 0, infinity when only
/// the reference is 0.
double relative_rmse(const Metrics& m);

/// How many times farther from fp64 `result` is than `eager`: RMSE(result) / max(RMSE(eager), floor),
/// the floor being the dtype's own rounding at the value's scale (eager's unit roundoff x RMS(fp64)),
/// so an eager result that happens to be exact does not make the ratio infinite. 1 when both are 0;
/// infinity when only the result has error and fp64 is all zero.
double error_ratio(const Metrics& result, const Metrics& eager);

/// The default of ToleranceRule::suspicious_ratio (--suspicious-ratio): the one place to change it.
/// 100: a result computed at a lower precision than eager is flagged (bf16 against fp32 moves the error
/// by up to 2^16 per element, a ViT's bf16 matmuls 5,700x at its output; fp16 or TF32 up to 2^13), while
/// clean Inductor compiles of the fixtures stay within 1.3x of eager (docs/verdicts.md).
inline constexpr double kDefaultSuspiciousRatio = 100;

/// The defaults of the node verdict (ToleranceRule::node_ratio, node_fail_ratio; --node-ratio,
/// --node-fail-ratio): the one place to change them. A node's compiled local error (the exploded compile:
/// the op alone through the compiler, fed fp64 values rounded to its input dtypes) over eager's local error
/// on the same inputs, floored at the dtype's rounding (error_ratio()). Clean Inductor compiles of every
/// fixture and zoo archive, fp32, bf16 and fp16, stay at or below 2.6 at every node on the CPU (GELU's
/// vectorized erf) and 1.3 on CUDA (TF32 convolutions aside: a real loss the verdict reports); planted 2-5%
/// single-op bugs in bf16/fp16 give 5.2x to 41x (docs/verdicts.md, "Node evidence": the calibration table).
/// Suspicious, not fail, by default: fail keeps meaning the outputs' rule fails (the same doc says why).
inline constexpr double kDefaultNodeRatio = 4;
inline constexpr double kDefaultNodeFailRatio = 0;

/// The verdict rule. The default is compatible with torch._dynamo.utils.same() (the accuracy
/// minifier's rule); the others judge the result against fp64 alone (--rule). Each kind is one file of
/// graphs/rules/ registered in graphs/rules/rule_registry.cpp (docs/architecture.md).
struct ToleranceRule {
  enum class Kind {
    Same,      ///< allclose to eager, else RMSE(result, fp64) <= multiplier x RMSE(eager, fp64) + tol/10
    Allclose,  ///< allclose to fp64 at atol = rtol = tol
    Ulp,       ///< max ULP distance to fp64, in the result's dtype, <= max_ulp
    Cosine,    ///< cosine similarity to fp64 >= min_cosine
    /// Scale-aware (docs/verdicts.md): RMSE(result, fp64) / RMS(fp64) <= max(multiplier x eager's, T) and
    /// max |result - fp64| / RMS(fp64) <= max(10 x eager's, 10 T), T per dtype (relative_threshold()).
    Relative,
  };
  Kind kind = Kind::Same;
  double max_ulp = 0;        ///< Ulp
  double min_cosine = 0.99;  ///< Cosine
  double tol = 1e-3;                    ///< --tol: atol = rtol = tol for the allclose step
  double fp32_multiplier = 2;           ///< RMSE(res, fp64) may be this many times RMSE(eager, fp64)
  double low_precision_multiplier = 3;  ///< the same for fp16/bf16 and for values with numel < 1000
  bool small_tensor_multipliers = false;  ///< opt-in: 8 for numel <= 500, 10 for numel <= 10
  bool equal_nan = true;
  /// A result the rule passes is `suspicious` when error_ratio(result, eager) >= this (--suspicious-ratio);
  /// 0 turns the level off.
  double suspicious_ratio = kDefaultSuspiciousRatio;
  /// Node evidence (docs/verdicts.md): a node whose compiled local error is at least this many times its
  /// eager local error (error_ratio(), floored at its dtype's rounding) makes the run at least suspicious
  /// whatever its outputs say (--node-ratio); 0 turns the node verdict off.
  double node_ratio = kDefaultNodeRatio;
  /// Such a node at least this many times eager's local error makes the run fail (--node-fail-ratio);
  /// 0: node evidence alone never fails a run (it is suspicious: exit 1 with --fail-on-suspicious).
  double node_fail_ratio = kDefaultNodeFailRatio;
};

/// The relative rule's threshold T on the relative RMSE of a `dtype` ("float32", "bfloat16", ...) result,
/// after Huawei Ascend's operator accuracy standard (MERE < T, MARE < 10 T): float16 2^-10, bfloat16
/// 2^-7, float32 2^-13, float8 e4m3 2^-3, e5m2 2^-2; float64 (not in the standard) 2^-40.
double relative_threshold(const std::string& dtype);

/// "same", "allclose", "ulp:4", "cosine:0.99", "relative" → a rule (other fields default). Throws pt2diff::Error(Usage).
ToleranceRule parse_rule(const std::string& spec);
/// The same, into `rule`: sets its kind and that kind's own parameters (max_ulp, min_cosine), keeping the
/// rest (tol, the multipliers, the ratios) as they are. Throws pt2diff::Error(Usage).
void read_rule(const std::string& spec, ToleranceRule& rule);
/// The rule's name as parse_rule() reads it.
std::string rule_name(const ToleranceRule& rule);

/// The three verdict levels: the rule fails; the rule passes but the result is suspicious (at least
/// ToleranceRule::suspicious_ratio times farther from fp64 than eager); the rule passes.
enum class Level { Pass, Suspicious, Fail };
const char* level_name(Level level);  ///< "pass", "suspicious", "fail"

/// Whether a result passes, with a stable reason and the numbers the rule used.
struct Verdict {
  bool pass = false;  ///< the rule passes (level Pass or Suspicious)
  Level level = Level::Fail;
  /// Stable reasons: "allclose", "rmse_within_bound", "rmse_exceeds_bound", "nan_where_fp64_finite",
  /// "eager_nan_fp64_agrees", "fp64_unavailable", "exact_match", "exact_mismatch", "shape_mismatch";
  /// other rules: "allclose_to_fp64", "not_allclose_to_fp64", "ulp_within_bound", "ulp_exceeds_bound",
  /// "cosine_within_bound", "cosine_below_bound", "relative_within_bound", "relative_rmse_exceeds_bound",
  /// "relative_max_exceeds_bound".
  std::string reason;
  std::string detail;  ///< the rule's numbers in words
  double rmse_result = 0, rmse_eager = 0, multiplier = 0, bound = 0;
  /// error_ratio(result, eager) against fp64 (floating values with an fp64 reference; else 0).
  double error_ratio = 0;
  /// Why this rule cannot see a 1% error in this value, as a stable code, empty when it can: "atol_dominates"
  /// (allclose, or same()'s allclose step: max |fp64| <= tol / (0.01 - tol), so atol = tol hides 1% of every
  /// element), "rmse_slack_dominates" (same()'s RMSE step: 1% of RMS(fp64) <= its absolute slack tol/10).
  /// Only the same and allclose rules have absolute terms; the report then suggests --rule relative.
  std::string blind_spot;
  std::string blind_detail;  ///< the numbers behind blind_spot, in words
};

/// Whether a verdict counts as failing: the rule fails, or it is suspicious and `suspicious_fails`
/// (--fail-on-suspicious for exit codes, --localize-suspicious for localization).
inline bool counts_as_failing(const Verdict& v, bool suspicious_fails) {
  return v.level == Level::Fail || (suspicious_fails && v.level == Level::Suspicious);
}

}  // namespace pt2diff
