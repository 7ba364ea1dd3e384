// graphs/rules/cosine.cpp — --rule cosine[:C]: cosine similarity to fp64 at least C (0.99); eager
// not consulted.
#include <fmt/format.h>

#include "graphs/rules/rule_registry.h"

namespace pt2diff {

namespace {
Verdict judge_cosine(const RuleEvidence& e, const ToleranceRule& rule) {
  Verdict v;
  const Metrics& m = *e.result;
  v.pass = m.nan == 0 && m.cosine >= rule.min_cosine;
  v.reason = v.pass ? "cosine_within_bound" : "cosine_below_bound";
  v.bound = rule.min_cosine;
  v.detail = fmt::format("cosine similarity to fp64 {:.6f} {} {:g}", m.cosine, v.pass ? ">=" : "<", rule.min_cosine);
  v.rmse_result = m.rmse;
  return v;
}
}  // namespace

const RuleKind& cosine_rule() {
  static const RuleKind rule{
      ToleranceRule::Kind::Cosine, "cosine", "cosine[:C]", "cosine[:C] (cosine similarity to fp64 >= C, 0.99)",
      [](const std::string& spec, const std::string& arg, ToleranceRule& r) { r.min_cosine = rule_number(spec, arg, 0.99); },
      [](const ToleranceRule& r) { return fmt::format("cosine:{:g}", r.min_cosine); },
      {"cosine_within_bound", "cosine_below_bound"},
      false, judge_cosine, false, nullptr, nullptr, nullptr};
  return rule;
}

}  // namespace pt2diff
