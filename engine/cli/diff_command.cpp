// engine/cli/diff_command.cpp — `pt2diff GRAPH [INPUTS]`: the main job (compare, report, exit code).
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "engine/cli/command.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"

namespace pt2diff::cli {

namespace {

class DiffCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app, /*required=*/false);
    inputs_.add_to(app);
    app.add_option("--compiled", options_.compiled, "what plays the compiled side (available: eager)")->default_val("eager");
    app.add_option("--tol", options_.rule.tol, "tolerance of the verdict rule (atol = rtol for the allclose step)")->default_val(1e-3);
    app.add_option("--fp32-multiplier", options_.rule.fp32_multiplier, "RMSE multiplier for fp32 outputs")->default_val(2.0);
    app.add_option("--low-precision-multiplier", options_.rule.low_precision_multiplier,
                   "RMSE multiplier for fp16/bf16 outputs and outputs with fewer than 1000 elements")->default_val(3.0);
    app.add_flag("--small-tensor-multipliers", options_.rule.small_tensor_multipliers,
                 "use multiplier 8 for numel <= 500 and 10 for numel <= 10");
    app.add_option("--top", options_.top, "how many nodes the ranking of introduced error lists")->default_val(10);
    app.add_option("--json", json_path_, "also write the report as JSON to this file (docs/report.schema.json)");
  }

  int run() override {
    if (graph_.graph.empty()) throw Error(Error::Kind::Usage, "no GRAPH given: pt2diff GRAPH [INPUTS] (see pt2diff --help)");
    Program program = graph_.load();
    std::optional<UserInputs> given = inputs_.load(program);
    if (!given && !program.sample_inputs)
      throw Error(Error::Kind::BadInputs, fmt::format("{} has no sample inputs: pass INPUTS or --random-inputs", program.path));
    BoundInputs bound = bind_inputs(program, given ? *given : *program.sample_inputs);
    DiffResult result = diff(program, bound, options_);
    std::cout << to_text(result);
    if (!json_path_.empty()) {
      std::ofstream f(json_path_);
      if (!(f << to_json(result))) throw Error(Error::Kind::Usage, fmt::format("cannot write {}", json_path_));
    }
    return result.diverged ? 1 : 0;
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  DiffOptions options_;
  std::string json_path_;
};

}  // namespace

std::unique_ptr<Command> make_diff_command() { return std::make_unique<DiffCommand>(); }

}  // namespace pt2diff::cli
