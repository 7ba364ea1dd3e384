// engine/cli/sweep_command.cpp — `pt2diff sweep GRAPH [INPUTS] --tol LO:HI:N`: one set of runs judged at
// every tolerance of a grid; table on the terminal, --csv, --json, --plot.
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "pt2diff/error.h"
#include "pt2diff/sweep.h"

namespace pt2diff::cli {

namespace {

class SweepCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app);
    inputs_.add_to(app);
    table_.add_to(app, kSweepCommand);  // the table's --tol is not a sweep's: its grid is
    app.add_option("--tol", tols_, "tolerances: LO:HI:N (N log-spaced points) or A,B,C")->default_val("1e-7:1e-1:13");
    app.add_option("--multiplier", multipliers_,
                   "second axis: RMSE multipliers of the same() rule, comma-separated (each replaces the fp32 and low-precision ones)")
        ->delimiter(',');
    app.add_flag("--localize", options_.localize, "localize at every point where an output fails (compiles are shared between points)");
    app.add_option("--csv", csv_, "write one row per (point, output) to this CSV file");
    app.add_option("--json", json_, "write the sweep as JSON (docs/sweep.schema.json)");
    app.add_option("--plot", plot_, "write an SVG plot of failing outputs and nodes against the tolerance");
  }

  int run() override {
    Program program = graph_.load(table_.libraries());
    options_.diff = table_.get(program);
    BoundInputs bound = inputs_.bind(program, options_.diff);
    options_.tols = parse_tolerances(tols_);
    options_.multipliers = multipliers_;
    TerminalProgress progress;
    options_.diff.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    SweepResult result = sweep(program, bound, options_);
    progress.clear();
    std::cout << sweep_to_text(result);
    if (!csv_.empty()) write_file(csv_, sweep_to_csv(result));
    if (!json_.empty()) write_file(json_, sweep_to_json(result));
    if (!plot_.empty()) write_file(plot_, sweep_to_svg(result));
    return report_compile_failures(result.run);
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  TableOptions table_;
  SweepOptions options_;
  std::string tols_ = "1e-7:1e-1:13";
  std::vector<double> multipliers_;
  std::string csv_, json_, plot_;
};

}  // namespace

std::unique_ptr<Command> make_sweep_command() { return std::make_unique<SweepCommand>(); }

}  // namespace pt2diff::cli
