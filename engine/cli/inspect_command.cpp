// engine/cli/inspect_command.cpp — `pt2diff inspect GRAPH [INPUTS]`: what is in the archive.
#include <iostream>

#include "engine/cli/command.h"
#include "graphs/graph_text.h"
#include "pt2diff/inspect.h"

namespace pt2diff::cli {

namespace {

class InspectCommand final : public Command {
 public:
  void add_to(CLI::App& app) override {
    graph_.add_to(app);
    inputs_.add_to(app);
    table_.add_to(app, kInspectCommand);  // --load-library, --seed, --max-memory
    app.add_flag("--json", json_, "print the summary as JSON (docs/inspect.schema.json)");
    app.add_flag("--graph", print_graph_, "also print the graph, one node per line");
  }

  int run() override {
    Program program = graph_.load(table_.libraries());
    InspectReport report = inspect(program, inputs_.load(program, table_.get(program)));
    if (json_) {
      std::cout << to_json(report);
    } else {
      std::cout << to_text(report);
      if (print_graph_) std::cout << "\n" << to_graph_text(program.ir.graph);
    }
    std::cout.flush();
    // Inputs that were asked for and do not bind are an input error: the summary above stays printed.
    if (report.binding && !report.binding->ok) {
      std::cerr << "pt2diff: " << report.binding->message << "\n";
      return 2;
    }
    return 0;
  }

 private:
  GraphOptions graph_;
  InputOptions inputs_;
  TableOptions table_;
  bool json_ = false;
  bool print_graph_ = false;
};

}  // namespace

std::unique_ptr<Command> make_inspect_command() { return std::make_unique<InspectCommand>(); }

}  // namespace pt2diff::cli
