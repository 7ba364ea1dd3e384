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
  std::vector<std::string> libraries;  ///< --load-library: loaded before the archive
  /// `required` is false on the root command, where a subcommand may stand instead of GRAPH.
  void add_to(CLI::App& app, bool required = true);
  Program load() const;
};

/// [INPUTS] | --random-inputs [--seed N]: what to feed the graph (default: the archive's sample inputs).
struct InputOptions {
  std::string inputs;
  bool random = false;
  uint64_t seed = 0;
  int64_t max_memory = 0;  ///< --max-memory (DiffOptions::max_memory): 0 the memory available, -1 none
  void add_to(CLI::App& app);
  /// The inputs chosen by the options, or nullopt for "the archive's sample inputs".
  std::optional<UserInputs> load(const Program& program) const;
  /// The chosen inputs, else the archive's sample inputs, bound to the program. Throws
  /// pt2diff::Error(BadInputs) when there are none.
  BoundInputs bind(const Program& program) const;
};

/// --compiled, --device, --inductor-config, --matmul-precision, --timeout, --worker-python,
/// --inductor-cache: what plays the compiled side and how it is set up.
struct CompilerOptions {
  std::string compiled = "inductor";
  std::string device;  ///< --device; empty: default_device(program)
  std::string reference_device = "auto";  ///< --reference-device
  int64_t gpu_memory = 0;                 ///< --gpu-memory (DiffOptions::gpu_memory)
  BackendOptions backend;
  void add_to(CLI::App& app);
  /// Sets `options`' compiled side: this group, the seed of `inputs`, the libraries of `graph`, and
  /// the device (the program's export device unless --device says otherwise).
  void apply_to(DiffOptions& options, const Program& program, const GraphOptions& graph, const InputOptions& inputs) const;
};

/// One stderr line per failed compile; returns the exit code 4 when any failed, else 0.
int report_compile_failures(const DiffResult& result);

/// Caps this process's allocations at what it holds now plus memory_limit_for(max_memory), at least 1 GiB (RLIMIT_DATA;
/// the worker gets its own cap, BackendOptions::memory_limit): an oversized run fails with an allocation
/// error, reported by main() as out_of_memory (exit 4), instead of waking the kernel's OOM killer. The CLI
/// only: the Python module never limits the user's process; not under AddressSanitizer.
void cap_own_memory(int64_t max_memory);

/// --rule, --tol, the multipliers, --suspicious-ratio and the node verdict's --node-ratio, --node-fail-ratio:
/// the verdict rule and its levels.
struct RuleOptions {
  std::string rule = "same";
  ToleranceRule parsed;
  bool fail_on_suspicious = false;   ///< --fail-on-suspicious (DiffOptions::fail_on_suspicious), registered by diff only
  /// `with_tol` false: the command registers its own --tol (a sweep's grid).
  void add_to(CLI::App& app, bool with_tol = true);
  /// --fail-on-suspicious, for the commands whose exit code says whether outputs agree (diff).
  void add_exit_code_to(CLI::App& app);
  /// The rule the options describe. Throws pt2diff::Error(Usage) for a malformed --rule.
  ToleranceRule get() const;
};

/// --no-exploded, --no-kernel-map, --no-localize, --localize-suspicious, --bisect, --max-compiles, --repeats, --top,
/// --workaround, --workaround-max-compiles: what runs besides the verdicts.
struct SearchOptions {
  bool exploded = true;
  bool localize_suspicious = false;  ///< --localize-suspicious (DiffOptions::localize_suspicious)
  bool kernel_map = true;
  LocalizeOptions localize;
  WorkaroundOptions workaround;      ///< --workaround, --workaround-max-compiles (DiffOptions::workaround)
  std::string bisect = "binary";
  size_t top = 10;
  void add_to(CLI::App& app);
};

/// The DiffOptions the groups describe, for `program` (the compiled side's default device is where it
/// was exported). to_flags() writes them back; tests/cli/flags_round_trip_test.cpp checks both ways.
DiffOptions diff_options(const Program& program, const GraphOptions& graph, const InputOptions& inputs,
                         const CompilerOptions& compiler, const RuleOptions& rule, const SearchOptions& search);

/// Writes `bytes` to the file at `path` (a report the user asked for); Error(Usage) naming it when it cannot.
void write_file(const std::string& path, const std::string& bytes);

std::unique_ptr<Command> make_inspect_command();
std::unique_ptr<Command> make_diff_command();
std::unique_ptr<Command> make_explain_command();
std::unique_ptr<Command> make_sweep_command();

/// `pt2diff batch ARGS...` (argv[1] == "batch"): execs `PYTHON -m pt2diff_batch --pt2diff SELF ARGS...`
/// (batch_command.cpp); returns only when that fails, with the exit code.
int run_batch(int argc, char** argv);

}  // namespace pt2diff::cli
