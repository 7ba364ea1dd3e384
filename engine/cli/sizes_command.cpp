// engine/cli/sizes_command.cpp — `pt2diff sizes GRAPH [INPUTS] --dim s77=1,2,7,...`: one dynamic compile judged at
// every size of the graph's dynamic dims; table on the terminal, --csv, --json, --html (docs/dynamic-shapes.md).
#include <fmt/format.h>
#include <iostream>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "pt2diff/error.h"
#include "pt2diff/sizes.h"

namespace pt2diff::cli {

namespace {

class SizesCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app);
    inputs_.add_to(app);
    table_.add_to(app, kDiffCommand);
    app.add_option("--dim", dims_,
                   "a dim to sweep and its sizes: SYMBOL=N,N,... or INPUT.size(D)=N,N,...; SYMBOL alone: its default sizes (the bounds, "
                   "1, small primes, powers of two and their neighbours); repeatable; default: every dynamic dim");
    app.add_option("--csv", csv_, "write one row per size to this CSV file");
    app.add_option("--json", json_, "write the sweep as JSON (docs/sizes.schema.json)");
    app.add_option("--html", html_, "write the sweep as one HTML page with its plot");
  }

  int run() override {
    Program program = graph_.load(table_.libraries());
    SizeSweepOptions options;
    options.diff = table_.get(program);
    BoundInputs bound = inputs_.bind(program, options.diff);
    for (const std::string& d : dims_) options.dims.push_back(parse_size_dim(d));
    TerminalProgress progress;
    options.diff.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    SizeSweepResult result = sweep_sizes(program, bound, options);
    progress.clear();
    std::cout << sizes_to_text(result);
    if (!csv_.empty()) write_file(csv_, sizes_to_csv(result));
    if (!json_.empty()) write_file(json_, sizes_to_json(result));
    if (!html_.empty()) write_file(html_, sizes_to_html(result));
    // Bad input (a dim that cannot be swept, a size refused) is exit 2, after every other size was judged and
    // every report written; else 1 when a size fails, 4 when only the compiler failed.
    bool refused = !result.refused_dims.empty(), fails = false, compiler = false;
    for (const SizePoint& p : result.points) {
      refused = refused || !p.judged;
      fails = fails || p.fails;
      compiler = compiler || p.compiled_failed;
      if (!p.judged) std::cerr << fmt::format("pt2diff: {}={} refused: {}\n", p.symbol, p.size, p.refused);
    }
    for (const std::string& why : result.refused_dims) std::cerr << "pt2diff: " << why << "\n";
    return refused ? 2 : fails ? 1 : compiler ? 4 : 0;
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  TableOptions table_;
  std::vector<std::string> dims_;
  std::string csv_, json_, html_;
};

}  // namespace

std::unique_ptr<Command> make_sizes_command() { return std::make_unique<SizesCommand>(); }

}  // namespace pt2diff::cli
