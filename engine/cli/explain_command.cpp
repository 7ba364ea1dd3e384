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
    app.add_option("--node", node_, "the node to explain (a name from pt2diff inspect --graph), or the first of a window")->required();
    app.add_option("--to", last_, "explain the window from --node to this node (the nodes between them it depends on)");
    table_.add_to(app, kExplainCommand);
  }

  int run() override {
    Program program = graph_.load(table_.libraries());
    options_ = table_.get(program);
    BoundInputs bound = inputs_.bind(program, options_);
    TerminalProgress progress;
    options_.backend.on_wait = [&](const std::string& activity, double elapsed) { progress.on_wait(activity, elapsed); };
    std::vector<Hint> hints = explain(program, bound, node_, options_, last_);
    progress.clear();
    std::cout << fmt::format("{}: {} on fp64-exact inputs, compiled = {}\n", program.path,
                             last_.empty() ? "node " + node_ + " alone" : "window " + node_ + " .. " + last_, options_.compiled);
    std::cout << hints_to_text(hints);
    return 0;
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  TableOptions table_;
  DiffOptions options_;
  std::string node_;
  std::string last_;
};

}  // namespace

std::unique_ptr<Command> make_explain_command() { return std::make_unique<ExplainCommand>(); }

}  // namespace pt2diff::cli
