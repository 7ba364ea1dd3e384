// engine/cli/dist_command.cpp — `pt2diff dist DIR`: a distributed capture judged rank by rank against one fp64 step
// (pt2diff/dist.h, docs/distributed.md).
#include <filesystem>
#include <fmt/format.h>
#include <iostream>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "pt2diff/dist.h"
#include "pt2diff/error.h"

namespace pt2diff::cli {

namespace {

namespace fs = std::filesystem;

class DistCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    app.add_option("DIR", dir_, "a capture of every rank: DIR/rank_0 ... DIR/rank_{N-1} (python -m pt2diff_capture ranks)")->required();
    app.add_option("--json", json_, "also write the report as JSON to this file");
    app.add_option("--graph", options_.graphs, "judge only this graph id (repeatable; default: every graph)");
    app.add_flag("--no-rank-local", no_rank_local_, "skip each rank's rank-local diff (node verdicts, localization): only the compiled "
                                                    "step per rank and the checks across ranks");
    app.add_option("--process-backend", options_.process_backend, "the compiled ranks' process group: gloo (CPU, default) or nccl");
    app.add_option("--collective-timeout", options_.collective_timeout_seconds,
                   "seconds a compiled collective may wait for the other ranks (default 300)");
    table_.add_to(app, kDiffCommand);
  }

  int run() override {
    // The table's defaults (the device) read one of the ranks' archives.
    const fs::path rank0 = fs::path(dir_) / "rank_0";
    std::string first;
    if (fs::is_directory(rank0))
      for (const auto& e : fs::directory_iterator(rank0))
        if (e.path().extension() == ".pt2" && (first.empty() || e.path().string() < first)) first = e.path().string();
    if (first.empty())
      throw Error(Error::Kind::Usage, fmt::format("{}: no rank_0/*.pt2: not a capture of every rank; capture the program under its "
                                                  "process group (python -m pt2diff_capture ranks --nproc N SCRIPT OUT, docs/distributed.md)",
                                                  dir_));
    options_.diff = table_.get(load_program(first));
    options_.rank_local = !no_rank_local_;
    TerminalProgress progress;
    options_.diff.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    DistResult r = diff_distributed(dir_, options_);
    progress.clear();
    std::cout << to_text(r);
    if (!json_.empty()) write_file(json_, to_json(r));
    if (r.compiled_failed) return 4;
    return r.diverged ? 1 : 0;
  }

 private:
  std::string dir_, json_;
  bool no_rank_local_ = false;
  DistOptions options_;
  TableOptions table_;
};

}  // namespace

std::unique_ptr<Command> make_dist_command() { return std::make_unique<DistCommand>(); }

}  // namespace pt2diff::cli
