// engine/compare/tolerance_rule.cpp — --rule specs read and written back (verdict.h). No torch: the
// CLI's option round trip and the torch-free tests use it.
#include <cmath>
#include <fmt/format.h>
#include <limits>

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
  else if (name == "relative" && arg.empty()) r.kind = ToleranceRule::Kind::Relative;
  else if (name == "ulp") {
    r.kind = ToleranceRule::Kind::Ulp;
    r.max_ulp = number(-1);
    if (r.max_ulp < 0) throw Error(Error::Kind::Usage, "--rule ulp:N needs the largest ULP distance allowed (ulp:4)");
  } else if (name == "cosine") {
    r.kind = ToleranceRule::Kind::Cosine;
    r.min_cosine = number(0.99);
  } else {
    throw Error(Error::Kind::Usage, fmt::format("unknown --rule '{}' (same, allclose, ulp:N, cosine[:C], relative)", spec));
  }
  return r;
}

std::string rule_name(const ToleranceRule& r) {
  switch (r.kind) {
    case ToleranceRule::Kind::Same: return "same";
    case ToleranceRule::Kind::Allclose: return "allclose";
    case ToleranceRule::Kind::Ulp: return fmt::format("ulp:{:g}", r.max_ulp);
    case ToleranceRule::Kind::Cosine: return fmt::format("cosine:{:g}", r.min_cosine);
    case ToleranceRule::Kind::Relative: return "relative";
  }
  return "same";
}

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

double relative_threshold(const std::string& dtype) {
  // Huawei Ascend's operator accuracy standard, single-benchmark thresholds by output dtype (docs/verdicts.md).
  if (dtype == "float16" || dtype == "complex32") return std::ldexp(1.0, -10);
  if (dtype == "bfloat16") return std::ldexp(1.0, -7);
  if (dtype == "float8_e4m3fn" || dtype == "float8_e4m3fnuz") return std::ldexp(1.0, -3);
  if (dtype == "float8_e5m2" || dtype == "float8_e5m2fnuz") return std::ldexp(1.0, -2);
  if (dtype == "float64" || dtype == "complex128") return std::ldexp(1.0, -40);
  return std::ldexp(1.0, -13);  // float32, complex64
}

}  // namespace pt2diff
