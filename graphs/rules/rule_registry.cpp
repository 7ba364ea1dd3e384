// graphs/rules/rule_registry.cpp — the table of verdict rules (rule_registry.h) and what the rules share.
#include "graphs/rules/rule_registry.h"

#include <cmath>
#include <fmt/format.h>

#include "pt2diff/error.h"

namespace pt2diff {

// One declaration per rule, defined in its own file.
const RuleKind& same_rule();      // rules/same.cpp
const RuleKind& allclose_rule();  // rules/allclose.cpp
const RuleKind& ulp_rule();       // rules/ulp.cpp
const RuleKind& cosine_rule();    // rules/cosine.cpp
const RuleKind& relative_rule();  // rules/relative.cpp

const std::vector<const RuleKind*>& rule_kinds() {
  static const std::vector<const RuleKind*> table = {&same_rule(), &allclose_rule(), &ulp_rule(), &cosine_rule(), &relative_rule()};
  return table;
}

const RuleKind& rule_kind(ToleranceRule::Kind kind) {
  for (const RuleKind* k : rule_kinds())
    if (k->kind == kind) return *k;
  throw Error(Error::Kind::Internal, fmt::format("verdict rule kind {} has no row in rule_registry.cpp", static_cast<int>(kind)));
}

const std::vector<const char*>& general_verdict_reasons() {
  static const std::vector<const char*> reasons = {"shape_mismatch", "exact_match", "exact_mismatch", "fp64_unavailable",
                                                   "no_compiled_value"};
  return reasons;
}

std::string rules_using_tol() {
  std::vector<std::string> names;
  for (const RuleKind* k : rule_kinds())
    if (k->uses_tol) names.emplace_back(k->name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

double rmse_multiplier(const RuleEvidence& e, const ToleranceRule& rule) {
  double m = e.low_precision || e.numel < 1000 ? rule.low_precision_multiplier : rule.fp32_multiplier;
  if (rule.small_tensor_multipliers) {
    if (e.numel <= 10) m = 10;
    else if (e.numel <= 500) m = 8;
  }
  return m;
}

double rule_number(const std::string& spec, const std::string& arg, double fallback) {
  if (arg.empty()) return fallback;
  try {
    size_t used = 0;
    double x = std::stod(arg, &used);
    if (used == arg.size()) return x;
  } catch (const std::exception&) {
  }
  throw Error(Error::Kind::Usage, fmt::format("--rule {}: '{}' is not a number", spec, arg));
}

bool atol_blind_spot(const Metrics& r, const ToleranceRule& rule, Verdict& v) {
  // allclose passes x (1 + 0.01) wherever 0.01 |x| <= tol + tol |x|.
  if (!(rule.tol < 0.01 && r.ref_max_abs <= rule.tol / (0.01 - rule.tol))) return false;
  v.blind_spot = "atol_dominates";
  v.blind_detail = fmt::format("max |fp64| = {:.3g} <= tol / (0.01 - tol) = {:.3g}, so atol = {:g} hides a 1% error", r.ref_max_abs,
                               rule.tol / (0.01 - rule.tol), rule.tol);
  return true;
}

std::optional<RuleLine> tol_plot_line(const ToleranceRule& rule, int metric) {
  if (metric != 1) return std::nullopt;
  return RuleLine{fmt::format("tol {:g} (allclose rtol)", rule.tol), rule.tol};
}

}  // namespace pt2diff
