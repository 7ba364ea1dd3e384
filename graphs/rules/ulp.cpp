// graphs/rules/ulp.cpp — --rule ulp:N: the largest distance to fp64, in units in the last place of
// the result's dtype, at most N; eager not consulted.
#include <fmt/format.h>

#include "graphs/rules/rule_registry.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {
Verdict judge_ulp(const RuleEvidence& e, const ToleranceRule& rule) {
  Verdict v;
  const Metrics& m = *e.result;
  v.pass = m.nan == 0 && m.max_ulp <= rule.max_ulp;
  v.reason = v.pass ? "ulp_within_bound" : "ulp_exceeds_bound";
  v.bound = rule.max_ulp;
  v.detail = fmt::format("max ULP distance to fp64 {:.1f} {} {:g}{}", m.max_ulp, v.pass ? "<=" : ">", rule.max_ulp,
                         m.nan ? fmt::format(" ({} NaN)", m.nan) : "");
  v.rmse_result = m.rmse;
  return v;
}
}  // namespace

const RuleKind& ulp_rule() {
  static const RuleKind rule{
      ToleranceRule::Kind::Ulp, "ulp", "ulp:N", "ulp:N (max ULP distance to fp64)",
      [](const std::string& spec, const std::string& arg, ToleranceRule& r) {
        r.max_ulp = rule_number(spec, arg, -1);
        if (r.max_ulp < 0) throw Error(Error::Kind::Usage, "--rule ulp:N needs the largest ULP distance allowed (ulp:4)");
      },
      [](const ToleranceRule& r) { return fmt::format("ulp:{:g}", r.max_ulp); },
      {"ulp_within_bound", "ulp_exceeds_bound"},
      false, judge_ulp, false, nullptr, nullptr,
      [](const ToleranceRule& r, int metric) -> std::optional<RuleLine> {
        if (metric != 0) return std::nullopt;
        return RuleLine{fmt::format("rule: {:g} ulp", r.max_ulp), r.max_ulp};
      }};
  return rule;
}

}  // namespace pt2diff
