// engine/cli/command.h — one struct per CLI command; option groups are structs too.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "pt2diff/advanced/backend.h"
#include "pt2diff/compare.h"
#include "pt2diff/diff.h"
#include "pt2diff/inputs.h"
#include "pt2diff/option_table.h"
#include "pt2diff/program.h"

namespace pt2diff::cli {

/// A subcommand: registers its options on `app`, then runs once parsed. run() returns the exit code;
/// it throws pt2diff::Error for bad input, which main() turns into one line and exit code 2.
class Command {
 public:
  virtual ~Command() = default;
  virtual void add_to(CLI::App& app) = 0;
  virtual int run() = 0;
};

/// How pt2diff was invoked, argv as one shell-quoted line (set by main()): the HTML report shows it.
inline std::string invocation;

/// On a crash of this process (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT): one line saying it is a bug to
/// report, and a backtrace, on stderr; then the signal is re-raised (crash_report.cpp).
void install_crash_report();

/// GRAPH [--model NAME]: which archive and which program inside it.
struct GraphOptions {
  std::string graph;
  std::string model;
  /// `required` is false on the root command, where a subcommand may stand instead of GRAPH.
  void add_to(CLI::App& app, bool required = true);
  /// The program, after loading `libraries` (--load-library: DiffOptions::backend.op_libraries).
  Program load(const std::vector<std::string>& libraries) const;
};

/// [INPUTS] | --random-inputs: what to feed the graph (default: the archive's sample inputs). --seed and
/// --max-memory are the option table's (TableOptions).
struct InputOptions {
  std::string inputs;
  bool random = false;
  void add_to(CLI::App& app);
  /// The inputs chosen by the options, or nullopt for "the archive's sample inputs"; drawn ones with
  /// `options`' seed, refused above its max_memory.
  std::optional<UserInputs> load(const Program& program, const DiffOptions& options) const;
  /// The chosen inputs, else the archive's sample inputs, bound to the program. Throws
  /// pt2diff::Error(BadInputs) when there are none.
  BoundInputs bind(const Program& program, const DiffOptions& options) const;
};

/// The options of the table (pt2diff/option_table.h) that one command takes: registered from the table,
/// read into a DiffOptions after parsing (checked there: a bad value is pt2diff::Error(Usage), one line).
class TableOptions {
 public:
  /// Registers every row whose `commands` has `command` (kDiffCommand, kExplainCommand, kSweepCommand).
  void add_to(CLI::App& app, unsigned command);
  /// The DiffOptions given, defaults elsewhere; the device, unless --device says otherwise, is where
  /// `program` was exported (default_device). Throws pt2diff::Error(Usage) for a value the table refuses.
  DiffOptions get(const Program& program) const;
  /// --load-library's libraries, which load before the program does.
  std::vector<std::string> libraries() const;

 private:
  std::vector<std::pair<const OptionSpec*, std::vector<std::string>>> given_;  ///< in the order parsed
};

/// One stderr line per failed compile; returns the exit code 4 when any failed, else 0.
int report_compile_failures(const DiffResult& result);

/// Caps this process's allocations at what it holds now plus memory_limit_for(max_memory), at least 1 GiB (RLIMIT_DATA;
/// the worker gets its own cap, BackendOptions::memory_limit): an oversized run fails with an allocation
/// error, reported by main() as out_of_memory (exit 4), instead of waking the kernel's OOM killer. The CLI
/// only: the Python module never limits the user's process; not under AddressSanitizer.
void cap_own_memory(int64_t max_memory);

/// Writes `bytes` to the file at `path` (a report the user asked for); Error(Usage) naming it when it cannot.
void write_file(const std::string& path, const std::string& bytes);

std::unique_ptr<Command> make_inspect_command();
std::unique_ptr<Command> make_diff_command();
std::unique_ptr<Command> make_explain_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_sizes_command();
std::unique_ptr<Command> make_recheck_command();
std::unique_ptr<Command> make_dist_command();

/// `pt2diff batch ARGS...` (argv[1] == "batch"): execs `PYTHON -m pt2diff_batch --pt2diff SELF ARGS...`
/// (batch_command.cpp); returns only when that fails, with the exit code.
int run_batch(int argc, char** argv);

}  // namespace pt2diff::cli
