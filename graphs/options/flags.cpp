// graphs/options/flags.cpp — DiffOptions written back as the CLI's flags (to_flags), from the option
// table (pt2diff/option_table.h), and shell quoting. The CLI parses the same table's flags;
// tests/cli/flags_round_trip_test.cpp checks that parsing what to_flags writes gives the same options back.
#include <fmt/format.h>

#include "pt2diff/option_table.h"

namespace pt2diff {

std::vector<std::string> to_flags(const DiffOptions& o, const std::string& default_device) {
  const DiffOptions defaults;
  std::vector<std::string> f;
  for (const OptionSpec& spec : option_table()) {
    if (!spec.written) continue;
    const OptionValue value = spec.get(o);
    const bool is_default = spec.program_default ? option_text(spec, value) == default_device : value == spec.get(defaults);
    if (is_default && !spec.always_written) continue;
    switch (spec.kind) {
      case OptionKind::Switch:
        if (std::get<bool>(value)) f.push_back(spec.flag);
        break;
      case OptionKind::NegatedSwitch:
        if (!std::get<bool>(value)) f.push_back(spec.flag);
        break;
      case OptionKind::Texts:
        for (const std::string& item : std::get<std::vector<std::string>>(value)) {
          f.push_back(spec.flag);
          f.push_back(item);
        }
        break;
      default:
        f.push_back(spec.flag);
        f.push_back(option_text(spec, value));
    }
  }
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
