// engine/cli/option_groups.cpp — the option groups the commands share: GRAPH, INPUTS, and the option
// table's flags (pt2diff/option_table.h), registered from the table.
#include "engine/cli/command.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sys/resource.h>

namespace pt2diff::cli {

void GraphOptions::add_to(CLI::App& app, bool required) {
  app.add_option("GRAPH", graph, "torch.export archive (.pt2) written by torch.export.save")->required(required);
  app.add_option("--model", model, "which models/<name>.json of the archive (default: the only one, or 'model')");
}

Program GraphOptions::load(const std::vector<std::string>& libraries) const {
  for (const std::string& library : libraries) load_op_library(library);
  return load_program(graph, LoadOptions{model});
}

void InputOptions::add_to(CLI::App& app) {
  auto* file = app.add_option("INPUTS", inputs,
                              "torch.save file of the inputs: tuple/list (positional), dict (by name) or (args, kwargs); "
                              "default: the archive's sample inputs");
  auto* rnd = app.add_flag("--random-inputs", random, "draw inputs from the graph's metadata instead");
  rnd->excludes(file);
}

void TableOptions::add_to(CLI::App& app, unsigned command) {
  const DiffOptions defaults;
  for (const OptionSpec& spec : option_table()) {
    if (!(spec.commands & command)) continue;
    const OptionSpec* row = &spec;
    if (spec.kind == OptionKind::Switch || spec.kind == OptionKind::NegatedSwitch) {
      app.add_flag_callback(spec.flag, [this, row] { given_.emplace_back(row, std::vector<std::string>{}); }, spec.help);
      continue;
    }
    CLI::Option* option = nullptr;
    if (spec.kind == OptionKind::Texts) {
      option = app.add_option_function<std::vector<std::string>>(
          spec.flag, [this, row](const std::vector<std::string>& values) { given_.emplace_back(row, values); }, spec.help);
    } else {
      option = app.add_option_function<std::string>(
          spec.flag, [this, row](const std::string& value) { given_.emplace_back(row, std::vector<std::string>{value}); }, spec.help);
      const std::string shown = option_text(spec, spec.get(defaults));
      if (!spec.program_default && !shown.empty() && !(spec.kind == OptionKind::Size && shown == "0")) option->default_str(shown);
    }
    if (!spec.choices.empty()) {
      std::string names;
      for (const std::string& c : spec.choices) names += (names.empty() ? "" : ",") + c;
      option->type_name("{" + names + "}");
    }
  }
}

DiffOptions TableOptions::get(const Program& program) const {
  DiffOptions options;
  options.backend.device = default_device(program);
  for (const auto& [spec, values] : given_) {
    if (spec->kind == OptionKind::Switch) {
      spec->set(options, true);
    } else if (spec->kind == OptionKind::NegatedSwitch) {
      spec->set(options, false);
    } else if (spec->kind == OptionKind::Texts) {
      std::vector<std::string> all = std::get<std::vector<std::string>>(spec->get(options));
      for (const std::string& v : values) all.push_back(v);
      spec->set(options, all);
    } else {
      spec->set(options, parse_option(*spec, values.front()));
    }
  }
  return options;
}

std::vector<std::string> TableOptions::libraries() const {
  std::vector<std::string> all;
  for (const auto& [spec, values] : given_)
    if (std::string(spec->flag) == "--load-library") all.insert(all.end(), values.begin(), values.end());
  return all;
}

BoundInputs InputOptions::bind(const Program& program, const DiffOptions& options) const {
  std::optional<UserInputs> given = load(program, options);
  if (!given && !program.sample_inputs)
    throw Error(Error::Kind::BadInputs,
                program.sample_inputs_problem.empty()
                    ? fmt::format("{} has no sample inputs: pass INPUTS or --random-inputs", program.path)
                    : fmt::format("{}: its sample inputs are unusable ({}): pass INPUTS or --random-inputs", program.path,
                                  program.sample_inputs_problem));
  return bind_inputs(program, given ? *given : *program.sample_inputs);
}

void cap_own_memory(int64_t max_memory) {
#if defined(__SANITIZE_ADDRESS__)
  return;  // ASan maps its own shadow and quarantine: a data cap breaks the sanitizer, not the run
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return;
#endif
#endif
  const int64_t limit = memory_limit_for(max_memory);
  if (limit <= 0) return;
  std::ifstream status("/proc/self/status");
  int64_t held_kib = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmData:", 0) == 0) held_kib = std::strtoll(line.c_str() + 7, nullptr, 10);
  const rlim_t cap = static_cast<rlim_t>(held_kib * 1024 + limit);
  rlimit current{};
  if (getrlimit(RLIMIT_DATA, &current) == 0 && current.rlim_cur != RLIM_INFINITY && current.rlim_cur < cap) return;  // tighter already
  // The soft limit only: the hard one stays what this process was given, which workers inherit from a worker
  // server as from this process (worker_server.cpp keys servers by it; each worker gets its own cap).
  const rlimit wanted{current.rlim_max == RLIM_INFINITY || current.rlim_max >= cap ? cap : current.rlim_max, current.rlim_max};
  setrlimit(RLIMIT_DATA, &wanted);
}

int report_compile_failures(const DiffResult& result) {
  if (!result.compiled_failed) return 0;
  for (const CompileRecord& c : result.compiles)
    if (!c.ok) std::cerr << fmt::format("pt2diff: the {} compile failed ({}): {}\n", c.what, failure_kind_name(c.failure), c.message);
  return 4;
}

std::optional<UserInputs> InputOptions::load(const Program& program, const DiffOptions& options) const {
  // Drawn inputs take the graph's declared shapes: a [2^20, 2^20] input is refused, not allocated.
  if (random) check_memory(program.ir.graph, /*exploded=*/false, options.max_memory);
  if (random) return random_inputs(program, options.backend.seed.value_or(0));
  if (!inputs.empty()) return load_inputs(inputs);
  return std::nullopt;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << bytes)) throw Error(Error::Kind::Usage, fmt::format("cannot write {}", path));
}

}  // namespace pt2diff::cli
