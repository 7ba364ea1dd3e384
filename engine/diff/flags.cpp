// engine/diff/flags.cpp — DiffOptions written back as the CLI's flags (to_flags), and shell quoting.
// engine/cli/ parses these flags into DiffOptions; tests/cli/flags_round_trip_test.cpp checks that
// parsing what to_flags writes gives the same options back, for every option.
#include <fmt/format.h>

#include "pt2diff/backend_spec.h"
#include "pt2diff/diff.h"

namespace pt2diff {

std::vector<std::string> to_flags(const DiffOptions& o, const std::string& default_device) {
  const DiffOptions defaults;
  const BackendOptions& b = o.backend;
  std::vector<std::string> f;
  auto add = [&](const std::string& flag, const std::string& value) {
    f.push_back(flag);
    f.push_back(value);
  };
  // The compiled side.
  add("--compiled", o.compiled);
  if (b.device != default_device) add("--device", b.device);  // the eager runs' device, and the compiler's
  if (o.reference_device != defaults.reference_device) add("--reference-device", o.reference_device);
  if (o.gpu_memory != defaults.gpu_memory) add("--gpu-memory", o.gpu_memory < 0 ? std::string("none") : fmt::format("{}", o.gpu_memory));
  for (const std::string& kv : b.inductor_config) add("--inductor-config", kv);
  if (!b.matmul_precision.empty()) add("--matmul-precision", b.matmul_precision);
  if (b.no_tf32) f.push_back("--no-tf32");
  if (b.timeout_seconds != defaults.backend.timeout_seconds) add("--timeout", fmt::format("{}", b.timeout_seconds));
  if (!b.python.empty()) add("--worker-python", b.python);
  for (const std::string& library : b.op_libraries) add("--load-library", library);
  if (b.seed && *b.seed != 0) add("--seed", fmt::format("{}", *b.seed));
  // The verdict rule.
  const ToleranceRule& r = o.rule;
  if (rule_name(r) != rule_name(defaults.rule)) add("--rule", rule_name(r));
  if (r.tol != defaults.rule.tol) add("--tol", fmt::format("{}", r.tol));
  if (r.fp32_multiplier != defaults.rule.fp32_multiplier) add("--fp32-multiplier", fmt::format("{}", r.fp32_multiplier));
  if (r.low_precision_multiplier != defaults.rule.low_precision_multiplier)
    add("--low-precision-multiplier", fmt::format("{}", r.low_precision_multiplier));
  if (r.small_tensor_multipliers) f.push_back("--small-tensor-multipliers");
  if (r.suspicious_ratio != defaults.rule.suspicious_ratio) add("--suspicious-ratio", fmt::format("{}", r.suspicious_ratio));
  if (r.node_ratio != defaults.rule.node_ratio) add("--node-ratio", fmt::format("{}", r.node_ratio));
  if (r.node_fail_ratio != defaults.rule.node_fail_ratio) add("--node-fail-ratio", fmt::format("{}", r.node_fail_ratio));
  if (o.fail_on_suspicious) f.push_back("--fail-on-suspicious");
  if (o.localize_suspicious) f.push_back("--localize-suspicious");
  // What runs besides the verdicts.
  if (!o.exploded) f.push_back("--no-exploded");
  if (!o.kernel_map) f.push_back("--no-kernel-map");
  if (!o.localize.enabled) f.push_back("--no-localize");
  if (o.localize.search == LocalizeOptions::Search::Linear) add("--bisect", "linear");
  if (o.localize.max_compiles != defaults.localize.max_compiles) add("--max-compiles", fmt::format("{}", o.localize.max_compiles));
  if (o.localize.repeats != defaults.localize.repeats) add("--repeats", fmt::format("{}", o.localize.repeats));
  if (o.top != defaults.top) add("--top", fmt::format("{}", o.top));
  if (o.workaround.enabled) f.push_back("--workaround");
  if (o.workaround.max_compiles != defaults.workaround.max_compiles)
    add("--workaround-max-compiles", fmt::format("{}", o.workaround.max_compiles));
  if (o.max_memory != defaults.max_memory) add("--max-memory", o.max_memory < 0 ? std::string("none") : fmt::format("{}", o.max_memory));
  return f;
}

std::string shell_line(const std::vector<std::string>& words) {
  const char* safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,";
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line += ' ';
    if (!w.empty() && w.find_first_not_of(safe) == std::string::npos) {
      line += w;
      continue;
    }
    line += '\'';
    for (char c : w) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace pt2diff
