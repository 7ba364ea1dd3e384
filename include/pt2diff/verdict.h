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
};

/// The verdict rule. The default is compatible with torch._dynamo.utils.same() (the accuracy
/// minifier's rule); the others judge the result against fp64 alone (--rule).
struct ToleranceRule {
  enum class Kind {
    Same,      ///< allclose to eager, else RMSE(result, fp64) <= multiplier x RMSE(eager, fp64) + tol/10
    Allclose,  ///< allclose to fp64 at atol = rtol = tol
    Ulp,       ///< max ULP distance to fp64, in the result's dtype, <= max_ulp
    Cosine,    ///< cosine similarity to fp64 >= min_cosine
  };
  Kind kind = Kind::Same;
  double max_ulp = 0;        ///< Ulp
  double min_cosine = 0.99;  ///< Cosine
  double tol = 1e-3;                    ///< --tol: atol = rtol = tol for the allclose step
  double fp32_multiplier = 2;           ///< RMSE(res, fp64) may be this many times RMSE(eager, fp64)
  double low_precision_multiplier = 3;  ///< the same for fp16/bf16 and for values with numel < 1000
  bool small_tensor_multipliers = false;  ///< opt-in: 8 for numel <= 500, 10 for numel <= 10
  bool equal_nan = true;
};

/// "same", "allclose", "ulp:4", "cosine:0.99" → a rule (other fields default). Throws pt2diff::Error(Usage).
ToleranceRule parse_rule(const std::string& spec);
/// The rule's name as parse_rule() reads it.
std::string rule_name(const ToleranceRule& rule);

/// Whether a result passes, with a stable reason and the numbers the rule used.
struct Verdict {
  bool pass = false;
  /// Stable reasons: "allclose", "rmse_within_bound", "rmse_exceeds_bound", "nan_where_fp64_finite",
  /// "eager_nan_fp64_agrees", "fp64_unavailable", "exact_match", "exact_mismatch", "shape_mismatch";
  /// other rules: "allclose_to_fp64", "not_allclose_to_fp64", "ulp_within_bound", "ulp_exceeds_bound",
  /// "cosine_within_bound", "cosine_below_bound".
  std::string reason;
  std::string detail;  ///< the rule's numbers in words
  double rmse_result = 0, rmse_eager = 0, multiplier = 0, bound = 0;
};

}  // namespace pt2diff
