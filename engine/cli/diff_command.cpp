// engine/cli/diff_command.cpp — `pt2diff GRAPH [INPUTS]`: the main job (compare, report, exit code).
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "engine/load/torch_save.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"
#include "pt2diff/html.h"
#include "pt2diff/values.h"

namespace pt2diff::cli {

namespace {

/// (compiled, eager, fp64): three tuples holding the judged graph outputs of each run, in report
/// order, None where a run has no value. Python: `compiled, eager, fp64 = torch.load(f, weights_only=True)`.
std::string saved_outputs(const DiffResult& r) {
  auto run = [&](auto member) {
    std::vector<c10::IValue> values;
    for (size_t i = 0; i < r.values->outputs.size(); ++i) {
      const OutputValues& o = r.values->outputs[i];
      // The graph's own outputs: a written input after the graph (OutputVerdict::value) is the program's input.
      if (i < r.outputs.size() && r.outputs[i].written_input) continue;
      values.push_back((o.*member).defined() ? c10::IValue(o.*member) : c10::IValue());
    }
    return c10::IValue(c10::ivalue::Tuple::create(std::move(values)));
  };
  return to_torch_save(c10::ivalue::Tuple::create(
      {run(&OutputValues::compiled), run(&OutputValues::eager), run(&OutputValues::fp64)}));
}

class DiffCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app, /*required=*/false);
    inputs_.add_to(app);
    table_.add_to(app, kDiffCommand);
    app.add_option("--json", json_path_, "also write the report as JSON to this file (docs/report.schema.json)");
    app.add_option("--html", html_path_, "also write the report as one self-contained HTML page (plots, the culprit's graph) to this file");
    app.add_option("--save-outputs", outputs_path_,
                   "write the graph outputs of the compiled, eager and fp64 runs to this torch.save file (the inputs a graph "
                   "writes in place, judged after the graph, are in --json and Python's output_values())");
  }

  int run() override {
    if (graph_.graph.empty()) throw Error(Error::Kind::Usage, "no GRAPH given: pt2diff GRAPH [INPUTS] (see pt2diff --help)");
    Program program = graph_.load(table_.libraries());
    DiffOptions options = table_.get(program);
    BoundInputs bound = inputs_.bind(program, options);
    cap_own_memory(options.max_memory);
    TerminalProgress progress;
    options.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    DiffResult result = diff(program, bound, options);
    progress.clear();
    std::cout << to_text(result);
    if (!json_path_.empty()) write_file(json_path_, to_json(result));
    if (!html_path_.empty()) write_file(html_path_, to_html(result, {&program, invocation, options.backend.device}));
    if (!outputs_path_.empty()) write_file(outputs_path_, saved_outputs(result));
    if (const int failed = report_compile_failures(result)) return failed;
    if (!result.eager_nonfinite.empty()) {
      std::cerr << "pt2diff: " << result.eager_nonfinite << "\n";
      return 2;
    }
    return counts_as_failing(result) ? 1 : 0;  // suspicious outputs only with --fail-on-suspicious
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  TableOptions table_;
  std::string json_path_;
  std::string html_path_;
  std::string outputs_path_;
};

}  // namespace

std::unique_ptr<Command> make_diff_command() { return std::make_unique<DiffCommand>(); }

}  // namespace pt2diff::cli
