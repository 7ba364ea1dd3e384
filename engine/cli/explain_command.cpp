// engine/cli/explain_command.cpp — `pt2diff explain GRAPH [INPUTS] --node NAME`: the hint experiments
// on any node, culprit or not.
#include <fmt/format.h>
#include <iostream>

#include "engine/cli/command.h"
#include "engine/report/progress.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"

namespace pt2diff::cli {

namespace {

class ExplainCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app);
    inputs_.add_to(app);
    app.add_option("--node", node_, "the node to explain (a name from pt2diff inspect --graph)")->required();
    app.add_option("--compiled", options_.compiled, "what plays the compiled side (as for the main job)")->default_val("inductor");
    app.add_option("--device", options_.backend.device, "device the compiler targets")->default_val("cpu");
    app.add_option("--inductor-config", options_.backend.inductor_config, "Inductor config override KEY=VALUE, repeatable");
    app.add_option("--timeout", options_.backend.timeout_seconds, "seconds one compile or run may take")->default_val(900.0);
    app.add_option("--rule", rule_, "verdict rule (same, allclose, ulp:N, cosine[:C])")->default_val("same");
    app.add_option("--tol", options_.rule.tol, "tolerance of the verdict rule")->default_val(1e-3);
  }

  int run() override {
    Program program = graph_.load();
    std::optional<UserInputs> given = inputs_.load(program);
    if (!given && !program.sample_inputs)
      throw Error(Error::Kind::BadInputs, fmt::format("{} has no sample inputs: pass INPUTS or --random-inputs", program.path));
    BoundInputs bound = bind_inputs(program, given ? *given : *program.sample_inputs);
    const ToleranceRule parsed = parse_rule(rule_);
    options_.rule.kind = parsed.kind;
    options_.rule.max_ulp = parsed.max_ulp;
    options_.rule.min_cosine = parsed.min_cosine;
    TerminalProgress progress;
    options_.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    std::vector<Hint> hints = explain(program, bound, node_, options_);
    progress.clear();
    std::cout << fmt::format("{}: node {} alone on fp64-exact inputs, compiled = {}\n", program.path, node_, options_.compiled);
    if (hints.empty()) std::cout << "no experiment applies (no floating output, or the compiler could not run it)\n";
    for (const Hint& h : hints) {
      std::cout << fmt::format("\n{} ({}): {}\n", h.kind, h.finding, h.summary);
      if (!h.suggestion.empty()) std::cout << fmt::format("  -> {}\n", h.suggestion);
      for (const auto& [name, value] : h.evidence) std::cout << fmt::format("  {:<28} {:.4g}\n", name, value);
    }
    return 0;
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  DiffOptions options_;
  std::string node_;
  std::string rule_ = "same";
};

}  // namespace

std::unique_ptr<Command> make_explain_command() { return std::make_unique<ExplainCommand>(); }

}  // namespace pt2diff::cli
