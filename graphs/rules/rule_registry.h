// graphs/rules/rule_registry.h — every verdict rule (--rule) in one table. A rule is one file under
// graphs/rules/ holding all of it: how --rule reads and writes it, its verdict, whether a sweep
// can vary its tolerance, where it is blind to a 1% error, and what the reports draw and say about it;
// plus one row in rule_registry.cpp and its enumerator in ToleranceRule::Kind (verdict.h). The rules see
// no tensors: verdict_rule.cpp measures the result and eager against fp64 and hands a rule those errors
// and the two allclose checks it may need (RuleEvidence), so the table and every rule build and are
// tested without torch (tests/graphs/rules/rule_registry_test.cpp checks the report schema's reasons
// against the table).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/verdict.h"

namespace pt2diff {

/// What a rule judges one floating-point value from (filled by judge() in verdict_rule.cpp).
struct RuleEvidence {
  /// The result's and eager's errors against fp64; both null when no fp64 reference exists (only a rule
  /// that judges_without_fp64 is then asked).
  const Metrics* result = nullptr;
  const Metrics* eager = nullptr;
  std::string dtype;          ///< eager's dtype name: "bfloat16"
  bool low_precision = false;  ///< eager's dtype is float16 or bfloat16
  long long numel = 0;
  /// The result, cast to eager's dtype, allclose to eager at atol = rtol = tol.
  std::function<bool(double tol, bool equal_nan)> allclose_to_eager;
  /// The result allclose to fp64, both in float64, at atol = rtol = tol (false without fp64).
  std::function<bool(double tol, bool equal_nan)> allclose_to_fp64;
};

/// A reference line a rule draws on the HTML report's per-node plot.
struct RuleLine {
  std::string label;
  double y = 0;
};

/// One verdict rule.
struct RuleKind {
  ToleranceRule::Kind kind;
  const char* name;    ///< what --rule names: "ulp"
  const char* syntax;  ///< how it is written, in the unknown-rule message: "ulp:N"
  const char* help;    ///< --rule's help: "ulp:N (max ULP distance to fp64)"
  /// Reads the text after "name:" ("" when there is none) into the rule's own fields of `rule`; throws
  /// Error(Usage) naming `spec`. Null: the rule takes no argument ("same:1" is an unknown rule).
  void (*parse)(const std::string& spec, const std::string& arg, ToleranceRule& rule);
  /// The spec parse_rule() reads back: "ulp:4".
  std::string (*write)(const ToleranceRule& rule);
  std::vector<const char*> reasons;  ///< every Verdict::reason judge() can give
  bool judges_without_fp64;          ///< asked even when no fp64 reference exists (same(): eager first)
  Verdict (*judge)(const RuleEvidence& evidence, const ToleranceRule& rule);
  /// --tol means something to it: a sweep may vary it (pt2diff sweep refuses the other rules).
  bool uses_tol;
  /// Sets Verdict::blind_spot and blind_detail when the rule cannot see a 1% error in a value whose error
  /// to fp64 is `result` (its fp64 scale is non-zero and finite); null: the rule is never blind.
  void (*blind_spot)(const Metrics& result, const ToleranceRule& rule, Verdict& verdict);
  /// Words after the rule's name in the HTML report's facts; null: none.
  std::string (*describe)(const ToleranceRule& rule);
  /// Its line on the per-node plot of metric 0 (ulp) or 1 (relative error), if it draws one there; null: none.
  std::optional<RuleLine> (*plot_line)(const ToleranceRule& rule, int metric);
};

/// The rules, in the order --rule's help lists them.
const std::vector<const RuleKind*>& rule_kinds();
/// The row of `kind` (every enumerator has one).
const RuleKind& rule_kind(ToleranceRule::Kind kind);
/// The reasons judge() gives before any rule is asked (shapes, integers, no fp64) and the one the diff
/// gives a missing compiled value: with every rule's reasons, the report schema's enum.
const std::vector<const char*>& general_verdict_reasons();
/// "same and allclose": the rules whose tolerance a sweep can vary, for its usage message.
std::string rules_using_tol();

// Shared by the rules: the RMSE multiplier of a value (same() and relative), --rule's number argument,
// and allclose's blind spot (same() and allclose).
double rmse_multiplier(const RuleEvidence& evidence, const ToleranceRule& rule);
double rule_number(const std::string& spec, const std::string& arg, double fallback);
/// Whether atol = tol hides a 1% error in a value of this fp64 scale; sets the verdict's blind spot if so.
bool atol_blind_spot(const Metrics& result, const ToleranceRule& rule, Verdict& verdict);
/// The allclose tolerance on the relative-error plot (metric 1): the line of same() and allclose.
std::optional<RuleLine> tol_plot_line(const ToleranceRule& rule, int metric);

}  // namespace pt2diff
