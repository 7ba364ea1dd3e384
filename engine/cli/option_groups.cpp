// engine/cli/option_groups.cpp — option groups shared by commands.
#include "engine/cli/command.h"

namespace pt2diff::cli {

void GraphOptions::add_to(CLI::App& app, bool required) {
  app.add_option("GRAPH", graph, "torch.export archive (.pt2) written by torch.export.save")->required(required);
  app.add_option("--model", model, "which models/<name>.json of the archive (default: the only one, or 'model')");
}

Program GraphOptions::load() const { return load_program(graph, LoadOptions{model}); }

void InputOptions::add_to(CLI::App& app) {
  auto* file = app.add_option("INPUTS", inputs,
                              "torch.save file of the inputs: tuple/list (positional), dict (by name) or (args, kwargs); "
                              "default: the archive's sample inputs");
  auto* rnd = app.add_flag("--random-inputs", random, "draw inputs from the graph's metadata instead");
  app.add_option("--seed", seed, "seed for --random-inputs")->default_val(0);
  rnd->excludes(file);
}

std::optional<UserInputs> InputOptions::load(const Program& program) const {
  if (random) return random_inputs(program, seed);
  if (!inputs.empty()) return load_inputs(inputs);
  return std::nullopt;
}

}  // namespace pt2diff::cli
