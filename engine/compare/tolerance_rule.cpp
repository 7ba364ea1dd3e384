// engine/compare/tolerance_rule.cpp — --rule specs read and written back (verdict.h). No torch: the
// CLI's option round trip and the torch-free tests use it.
#include <fmt/format.h>

#include "pt2diff/error.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

ToleranceRule parse_rule(const std::string& spec) {
  ToleranceRule r;
  const std::string name = spec.substr(0, spec.find(':'));
  const std::string arg = spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
  auto number = [&](double fallback) {
    if (arg.empty()) return fallback;
    try {
      size_t used = 0;
      double x = std::stod(arg, &used);
      if (used == arg.size()) return x;
    } catch (const std::exception&) {
    }
    throw Error(Error::Kind::Usage, fmt::format("--rule {}: '{}' is not a number", spec, arg));
  };
  if (name == "same" && arg.empty()) r.kind = ToleranceRule::Kind::Same;
  else if (name == "allclose" && arg.empty()) r.kind = ToleranceRule::Kind::Allclose;
  else if (name == "ulp") {
    r.kind = ToleranceRule::Kind::Ulp;
    r.max_ulp = number(-1);
    if (r.max_ulp < 0) throw Error(Error::Kind::Usage, "--rule ulp:N needs the largest ULP distance allowed (ulp:4)");
  } else if (name == "cosine") {
    r.kind = ToleranceRule::Kind::Cosine;
    r.min_cosine = number(0.99);
  } else {
    throw Error(Error::Kind::Usage, fmt::format("unknown --rule '{}' (same, allclose, ulp:N, cosine[:C])", spec));
  }
  return r;
}

std::string rule_name(const ToleranceRule& r) {
  switch (r.kind) {
    case ToleranceRule::Kind::Same: return "same";
    case ToleranceRule::Kind::Allclose: return "allclose";
    case ToleranceRule::Kind::Ulp: return fmt::format("ulp:{:g}", r.max_ulp);
    case ToleranceRule::Kind::Cosine: return fmt::format("cosine:{:g}", r.min_cosine);
  }
  return "same";
}

}  // namespace pt2diff
