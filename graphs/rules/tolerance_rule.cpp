// graphs/rules/tolerance_rule.cpp — --rule specs read and written back through the rule table
// (rule_registry.h), the verdict levels' names and the error ratio (verdict.h). No torch: the CLI's option
// round trip and the torch-free tests use it.
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "graphs/rules/rule_registry.h"
#include "pt2diff/error.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

void read_rule(const std::string& spec, ToleranceRule& rule) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  for (const RuleKind* k : rule_kinds()) {
    if (name != k->name) continue;
    if (!k->parse && !arg.empty()) break;  // "same:1": a rule without an argument given one
    rule.kind = k->kind;
    if (k->parse) k->parse(spec, arg, rule);
    return;
  }
  std::string syntaxes;
  for (const RuleKind* k : rule_kinds()) syntaxes += (syntaxes.empty() ? "" : ", ") + std::string(k->syntax);
  throw Error(Error::Kind::Usage, fmt::format("unknown --rule '{}' ({})", spec, syntaxes));
}

ToleranceRule parse_rule(const std::string& spec) {
  ToleranceRule r;
  read_rule(spec, r);
  return r;
}

std::string rule_name(const ToleranceRule& r) { return rule_kind(r.kind).write(r); }

const char* level_name(Level level) {
  switch (level) {
    case Level::Pass: return "pass";
    case Level::Suspicious: return "suspicious";
    case Level::Fail: return "fail";
  }
  return "fail";
}

double relative_rmse(const Metrics& m) {
  if (m.ref_rms > 0) return m.rmse / m.ref_rms;
  return m.rmse == 0 ? 0 : std::numeric_limits<double>::infinity();
}

double error_ratio(const Metrics& result, const Metrics& eager) {
  const double floor = std::max(eager.rmse, eager.unit_roundoff * eager.ref_rms);
  if (floor > 0) return result.rmse / floor;
  return result.rmse == 0 ? 1 : std::numeric_limits<double>::infinity();
}

}  // namespace pt2diff
