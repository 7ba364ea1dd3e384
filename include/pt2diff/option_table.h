// pt2diff/option_table.h — every option of a diff run declared once: the DiffOptions field it sets, its
// CLI flag, its Python keyword, its help, its check and its default (DiffOptions{}'s own value). The CLI
// registers its flags from this table, to_flags() writes them back from it, and the Python module
// converts its keywords and takes its defaults from it. Adding an option is one row (option_table.cpp)
// plus the code that uses the field.
//
//   for (const pt2diff::OptionSpec& o : pt2diff::option_table())
//     std::cout << o.flag << "  " << o.keyword << "  " << pt2diff::option_text(o, o.get(pt2diff::DiffOptions{})) << "\n";
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pt2diff/options.h"

namespace pt2diff {

/// An option's value as the table reads and writes it: bool (switches), int64_t (counts, sizes in bytes,
/// -1 for "none"), double, one string, or the strings of a repeatable option.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

enum class OptionKind {
  Switch,         ///< `--flag` turns it on
  NegatedSwitch,  ///< `--no-flag` turns it off; the Python keyword is the positive name (exploded=False)
  Text,           ///< one string, one of `choices` when there are any
  Real,           ///< a number within [minimum, maximum]
  Count,          ///< an integer within [minimum, maximum]
  Size,           ///< bytes: "16G", "512M", "1.5T", a count, or "none" (-1); Python: an int, such a string, or None (0)
  Texts,          ///< a string, repeatable (the flag once per value)
};

/// Which commands take an option (OptionSpec::commands, a mask): the CLI registers it on those, and the
/// Python functions of the same names take its keyword.
constexpr unsigned kDiffCommand = 1;     ///< `pt2diff GRAPH INPUTS`, pt2diff.diff()
constexpr unsigned kExplainCommand = 2;  ///< `pt2diff explain`, pt2diff.explain()
constexpr unsigned kSweepCommand = 4;    ///< `pt2diff sweep`, pt2diff.sweep() (whose --tol is its grid, not this table's)
constexpr unsigned kInspectCommand = 8;  ///< `pt2diff inspect` (loading the archive and drawing inputs only)

struct OptionSpec {
  const char* flag;     ///< "--tol"; a NegatedSwitch's is the negative one, "--no-exploded"
  const char* keyword;  ///< Python keyword, "tol", "exploded"; nullptr: the CLI only
  unsigned commands;    ///< kDiffCommand | kExplainCommand | kSweepCommand | kInspectCommand
  OptionKind kind;
  const char* help;
  std::vector<std::string> choices = {};  ///< Text: the values allowed (empty: any)
  double minimum = -1e300;                ///< Real, Count
  double maximum = 1e300;                 ///< Real, Count
  /// A value other than the default, as the CLI reads it ("" for a switch: the flag alone). The flags
  /// round-trip test sets every row to its example at once; the docs show them.
  const char* example = "";
  /// Written back by to_flags() when it differs from the default. False for what changes no verdict
  /// (where the Inductor cache lives, where a repro is written).
  bool written = true;
  /// Written by to_flags() even at its default (--compiled: a repro command says what it compiles with).
  bool always_written = false;
  /// Its default is where the graph was exported (--device), not DiffOptions{}'s value: to_flags() compares
  /// it with its `default_device`, and the CLI and Python fill it in when it is not given.
  bool program_default = false;
  std::function<OptionValue(const DiffOptions&)> get = {};  ///< the field's value
  std::function<void(DiffOptions&, const OptionValue&)> set = {};  ///< sets the field
};

/// The table, in the order to_flags() writes the flags.
const std::vector<OptionSpec>& option_table();
/// The row of `flag` ("--tol") or of Python keyword `keyword` ("tol"); nullptr when there is none.
const OptionSpec* find_option_flag(const std::string& flag);
const OptionSpec* find_option_keyword(const std::string& keyword);

/// `text` read as the CLI reads the option's value (a Size's "16G", a Count's "64"), checked. Throws
/// pt2diff::Error(Usage) naming the flag and what it expects. Not for switches (they take no value).
OptionValue parse_option(const OptionSpec& spec, const std::string& text);
/// Why `value` is not allowed ("--repeats 0: expected 1 to 100"), or "" when it is. `name` is how the
/// message names the option: its flag, or its Python keyword.
std::string option_problem(const OptionSpec& spec, const OptionValue& value, const std::string& name);
/// The value as the CLI reads it back ("none" for a size of -1, "1e-06" for a number); a list's items joined by ",".
std::string option_text(const OptionSpec& spec, const OptionValue& value);

}  // namespace pt2diff
