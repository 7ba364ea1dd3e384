// engine/cli/main.cpp — pt2diff's entry point: parse, run one command, map errors to exit codes.
//
// `pt2diff GRAPH [INPUTS]` runs the main job (diff_command.cpp); subcommands do the rest.
// Exit codes: 0 success (outputs agree); 1 outputs diverge; 2 a problem with the command line or the
// input files (one line on stderr names it); 3 an internal error (a bug in pt2diff: please report it);
// 4 the compiler failed, crashed or hung (the report, with everything computed, is still written).
#include <c10/util/Exception.h>
#include <cstdlib>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>
#include <new>
#include <vector>

#include "engine/cli/command.h"
#include "engine/load/archive.h"
#include "pt2diff/error.h"

namespace {

/// libtorch's warnings (a deprecation while reading a quantized tensor, ...) would come before pt2diff's
/// own one line and say nothing a user can act on; PT2DIFF_TORCH_WARNINGS=1 shows them.
class QuietTorchWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

/// Large blocks go back to the system when freed. glibc serves a block from its heap rather than its own
/// mapping once a freed mapping of that size raised its threshold (up to 32 MiB); the fp64 run casts each weight
/// when first read and frees it after its last use, and the small values kept for the later stages pin the heap
/// those casts went through. A 0.95 B-parameter bf16 decoder (bench/memory_bench.py, `--compiled eager
/// --no-exploded`, values kept for localization): the engine's resident memory after the lockstep runs 2810 MiB ->
/// 2061 MiB, its peak 3435 MiB -> 2685 MiB (1935 MiB with the program loaded), the run 5.1 s -> 5.7 s; with a
/// threshold of 32 MiB the peak was 3653 MiB. Blocks under 4 MiB are served as before. (The Python module leaves
/// its host process's allocator alone: docs/performance.md, "Memory beside eager's".)
void return_large_blocks_on_free() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // The corpus runner is Python (python/pt2diff_batch): its arguments are its own, parsed there.
  if (argc > 1 && std::string(argv[1]) == "batch") return pt2diff::cli::run_batch(argc, argv);
  return_large_blocks_on_free();
  pt2diff::cli::install_crash_report();
  static QuietTorchWarnings quiet;
  if (const char* show = std::getenv("PT2DIFF_TORCH_WARNINGS"); !show || std::string(show) != "1") c10::WarningUtils::set_warning_handler(&quiet);
  pt2diff::cli::invocation = pt2diff::shell_line(std::vector<std::string>(argv, argv + argc));
  CLI::App app{"pt2diff: find where a compiled PyTorch 2 graph stops agreeing with the truth"};
  app.require_subcommand(0, 1);
  auto main_job = pt2diff::cli::make_diff_command();
  main_job->add_to(app);
  app.set_version_flag("--version", "pt2diff 0.1.0");

  struct Entry {
    const char* name;
    const char* help;
    std::unique_ptr<pt2diff::cli::Command> command;
  };
  std::vector<Entry> commands;
  commands.push_back({"inspect", "summarize an archive: ops, dtypes, inputs/outputs, weights, unsupported ops, input binding",
                      pt2diff::cli::make_inspect_command()});
  commands.push_back({"explain", "run the hint experiments (dtype promotion, reduction order, compiler levers) on one node",
                      pt2diff::cli::make_explain_command()});
  commands.push_back({"sweep", "judge one set of runs at a grid of tolerances: verdicts, failing nodes, the tolerance each output needs",
                      pt2diff::cli::make_sweep_command()});
  commands.push_back({"sizes", "judge one dynamic compile at every size of the graph's dynamic dims: verdict, worst ratio and culprit per size "
                               "(docs/dynamic-shapes.md)",
                      pt2diff::cli::make_sizes_command()});
  commands.push_back({"recheck", "judge a graph, a repro directory or a batch summary through the compilers of other torch installations: "
                                 "verdict and culprit per torch, the regression between them, --bisect-versions for the first bad one (docs/upstream.md)",
                      pt2diff::cli::make_recheck_command()});
  commands.push_back({"dist", "judge a distributed capture (DIR/rank_R) rank by rank against one fp64 step, the collectives simulated; the "
                              "compiled ranks run in a real process group; culprit per rank, collective or rank-local op (docs/distributed.md)",
                      pt2diff::cli::make_dist_command()});

  // Listed in --help only: main() hands `batch` to Python before parsing.
  app.add_subcommand("batch", "triage a corpus of graphs (capture dirs, manifests, folders of .pt2), locally or on Ray (docs/batch.md)")
      ->prefix_command();

  std::vector<std::pair<CLI::App*, pt2diff::cli::Command*>> parsed;
  for (Entry& e : commands) {
    CLI::App* sub = app.add_subcommand(e.name, e.help);
    e.command->add_to(*sub);
    parsed.emplace_back(sub, e.command.get());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, command] : parsed)
      if (sub->parsed()) return command->run();
    return main_job->run();
  } catch (const pt2diff::Error& e) {
    std::cerr << "pt2diff: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::cerr << "pt2diff: out_of_memory: pt2diff's own runs went past their memory limit (--max-memory): raise it, or use "
                 "smaller inputs\n";
    return 4;
  } catch (const c10::Error& e) {
    // The CPU allocator's message: "[enforce fail at alloc_cpu.cpp:N] err == 0. DefaultCPUAllocator: can't
    // allocate memory: you tried to allocate B bytes. ..." (or "not enough memory"), over several lines.
    const std::string text = e.what();
    for (const char* said : {"can't allocate memory", "not enough memory"})
      if (const auto at = text.find(said); at != std::string::npos) {
        const auto from = text.rfind("DefaultCPUAllocator", at);
        const std::string what = pt2diff::first_line(text.substr(from == std::string::npos ? at : from));
        std::cerr << "pt2diff: out_of_memory: pt2diff's own runs went past their memory limit (--max-memory): " << what
                  << "; raise --max-memory, or use smaller inputs\n";
        return 4;
      }
    std::cerr << "pt2diff: internal error (libtorch): " << pt2diff::first_line(text) << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "pt2diff: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
