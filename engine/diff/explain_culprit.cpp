// engine/diff/explain_culprit.cpp — stage explain_culprit, and explain_window, which explain() shares: the
// hint experiments (engine/hints/) on the culprit window, fed the kept fp64 values rounded to their
// dtypes, with its compiled, eager and fp64 results.
#include <algorithm>

#include "engine/diff/stages.h"
#include "engine/hints/hint_registry.h"

namespace pt2diff {

std::vector<Hint> explain_window(const RunState& s, const Culprit& culprit) {
  const Graph& g = s.program.ir.graph;
  std::vector<NodeId> nodes;
  for (const std::string& name : culprit.nodes)
    for (const Node& n : g.nodes())
      if (n.name == name) nodes.push_back(n.id);
  if (nodes.empty()) return {};
  std::vector<ValueId> judged = g.node(nodes.back()).output_values();
  for (ValueId v : read_before_written(g, s.storage, nodes))  // a write after a read: the value read before it
    if (std::find(judged.begin(), judged.end(), v) == judged.end()) judged.push_back(v);
  HintContext ctx{s.program, s.interpreter, s.options, RegionSpec::fused(g, nodes, judged), {}, {}, {}, {}, 0, {}};
  // An input the window writes in place is a result of it too (its value after the window), judged like one.
  for (ValueId v : written_region_inputs(s.storage, ctx.window))
    if (std::find(ctx.window.outputs.begin(), ctx.window.outputs.end(), v) == ctx.window.outputs.end()) ctx.window.outputs.push_back(v);
  ctx.storage = s.storage.any() ? &s.storage : nullptr;
  ctx.inputs = s.reference.region_inputs(ctx.window);
  const std::vector<std::string>& random_nodes = s.runs.native.random_nodes;
  for (const std::string& name : culprit.nodes)
    if (std::find(random_nodes.begin(), random_nodes.end(), name) != random_nodes.end()) ctx.random_nodes.push_back(name);
  for (size_t i = 0; i < ctx.window.outputs.size(); ++i)
    if (g.value(ctx.window.outputs[i]).name == culprit.value) ctx.judged = i;
  const c10::IValue fp64 = s.reference.region_fp64(ctx.window, ctx.window.outputs.at(ctx.judged));
  const c10::IValue eager = s.interpreter.run_region(ctx.window, ctx.inputs).at(ctx.judged);
  if (!fp64.isTensor() || !eager.isTensor()) return {};
  ctx.backend = &s.backend;
  ctx.fp64 = fp64.toTensor();
  ctx.eager = eager.toTensor();
  try {
    const c10::IValue compiled = s.backend.compile(ctx.window, ctx.inputs)->run(ctx.inputs).at(ctx.judged);
    if (!compiled.isTensor()) return {};
    ctx.compiled = compiled.toTensor();
  } catch (const BackendFailure&) {
    return {};
  }
  std::vector<Hint> hints;
  for (const HintExperiment& experiment : hint_experiments())
    if (auto h = experiment.run(ctx)) hints.push_back(std::move(*h));
  return hints;
}

void explain_culprit(RunState& s) {
  if (!s.result.localization) return;
  // In the graph that names the culprit: the region inlined when localization went inside one.
  const RunState& c = s.culprit_job();
  const Culprit& culprit = c.result.localization->culprit;
  const bool named = culprit.named();
  if (named || c.random_first) s.result.localization->hints = explain_window(c, culprit);
}

}  // namespace pt2diff
