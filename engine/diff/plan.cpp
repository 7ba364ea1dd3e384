// engine/diff/plan.cpp — stage plan_run: what this graph and backend allow, and what the report must
// say up front (in-place mutation, a GPU export run on the CPU).
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/diff/stages.h"
#include "graphs/memory_estimate.h"

namespace pt2diff {

namespace {

/// What running a GPU export on the CPU changes, grouped by kind: "device cuda:0 -> cpu: arange, full".
std::string cpu_run_warning(const Program& program, const std::vector<DeviceRewrite>& rewrites) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_kind;
  for (const DeviceRewrite& rw : rewrites) {
    auto it = std::find_if(by_kind.begin(), by_kind.end(), [&](const auto& k) { return k.first == rw.what; });
    if (it == by_kind.end()) it = by_kind.insert(by_kind.end(), {rw.what, {}});
    it->second.push_back(rw.node);
  }
  std::vector<std::string> kinds;
  for (const auto& [what, nodes] : by_kind) kinds.push_back(fmt::format("{} ({})", what, fmt::join(nodes, ", ")));
  return fmt::format("the graph was exported on {}; pt2diff's eager and fp64 runs are on the CPU, so eager is CPU eager "
                     "(close to, not bit for bit, {} eager){}{}", program.export_device.str(), program.export_device.type,
                     kinds.empty() ? "" : "; run differently there: ", fmt::join(kinds, "; "));
}

}  // namespace

void plan_run(RunState& s) {
  DiffResult& r = s.result;
  r.graph = s.program.path;
  r.inputs = s.inputs.origin;
  r.compiled = s.backend.name();
  r.rule = s.options.rule;
  s.interpreter.set_seed(s.options.backend.seed);  // the compiled side is seeded alike, every run
  // Per-op inputs (exploded compile, localization windows) assume each value is written once; an op
  // mutating values in place breaks that, so only whole-graph verdicts are given.
  s.in_place = s.interpreter.mutates_inputs();  // scans every kernel: once
  if (s.in_place)
    r.warnings.push_back("an op in this graph mutates values in place (a custom op in a training-IR graph): the exploded compile "
                         "and localization are skipped; export the core ATen graph (ep.run_decompositions(), where mutation "
                         "is functional: auto_functionalized) to localize");
  if (s.program.export_device.type != "cpu") r.warnings.push_back(cpu_run_warning(s.program, s.interpreter.device_rewrites()));
  s.exploded = s.options.exploded && s.backend.compiles_regions() && !s.in_place;
  s.bisect = s.options.localize.enabled && !s.in_place;
  s.keep = s.exploded || (s.bisect && s.backend.compiles_regions());
  // Before any run allocates: refuse with the estimate rather than die in the allocator.
  check_memory(s.program.ir.graph, s.exploded, s.options.max_memory, s.inputs.symbols);
}

}  // namespace pt2diff
