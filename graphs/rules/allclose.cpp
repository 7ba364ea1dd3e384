// graphs/rules/allclose.cpp — --rule allclose: the result allclose to fp64 at atol = rtol = tol,
// eager not consulted.
#include <fmt/format.h>

#include "graphs/rules/rule_registry.h"

namespace pt2diff {

namespace {
Verdict judge_allclose(const RuleEvidence& e, const ToleranceRule& rule) {
  Verdict v;
  const Metrics& m = *e.result;
  v.pass = e.allclose_to_fp64(rule.tol, rule.equal_nan);
  v.reason = v.pass ? "allclose_to_fp64" : "not_allclose_to_fp64";
  v.detail = fmt::format("max |result - fp64| = {:.3g} (max rel {:.3g}) {} atol=rtol={}", m.max_abs, m.max_rel,
                         v.pass ? "within" : "beyond", rule.tol);
  v.rmse_result = m.rmse;
  return v;
}
}  // namespace

const RuleKind& allclose_rule() {
  static const RuleKind rule{
      ToleranceRule::Kind::Allclose, "allclose", "allclose", "allclose (to fp64 at --tol)", nullptr,
      [](const ToleranceRule&) -> std::string { return "allclose"; },
      {"allclose_to_fp64", "not_allclose_to_fp64"},
      false, judge_allclose, true,
      [](const Metrics& r, const ToleranceRule& rule, Verdict& v) { atol_blind_spot(r, rule, v); },
      nullptr, tol_plot_line};
  return rule;
}

}  // namespace pt2diff
