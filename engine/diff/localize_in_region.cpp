// engine/diff/localize_in_region.cpp — stage localize_in_region: when localization names a top-level
// torch.autocast region (a training-IR `wrap_with_autocast` node, which may hold a whole model), the
// search goes inside it. The region is inlined (graphs/inline_region.h: each body op a top-level node
// under the region's autocast, in pt2diff's runs and in the worker's compiles alike) and the main job runs
// again on that graph, whose localization, hints and repro then stand for the run's: the op inside the
// region. The extra cost is that job's compiles (the inlined graph whole, its exploded ops, the probes).
#include <fmt/format.h>

#include "engine/diff/stages.h"
#include "graphs/inline_region.h"

namespace pt2diff {

void localize_in_region(RunState& s) {
  DiffResult& r = s.result;
  if (!r.localization) return;
  Localization& loc = *r.localization;
  const Culprit& culprit = loc.culprit;
  if (culprit.kind != Culprit::Kind::SingleOp || culprit.nodes.size() != 1) return;
  const Graph& g = s.program.ir.graph;
  NodeId region = kGraphInput;
  for (const Node& n : g.nodes())
    if (n.name == culprit.nodes.front()) region = n.id;
  if (region == kGraphInput) return;
  std::string why;
  const std::optional<AutocastRegion> autocast = autocast_region(g.node(region), why);
  if (!autocast) return;
  std::optional<ExportedGraph> inlined = inline_autocast_region(s.program.ir, region, why);
  if (!inlined) {
    r.warnings.push_back(fmt::format("the culprit {} is a torch.autocast region; pt2diff cannot look inside it: {}", culprit.nodes.front(), why));
    return;
  }
  Program body = s.program;  // weights and inputs are shared, not copied
  body.ir = std::move(*inlined);
  DiffOptions options = s.options;
  options.workaround.enabled = false;  // the run's own stage searches, on the graph as exported
  if (s.options.backend.on_wait)
    options.backend.on_wait = [user = s.options.backend.on_wait, label = "[inside " + culprit.nodes.front() + "] "](
                                  const std::string& activity, double elapsed) { user(label + activity, elapsed); };
  const std::string region_name = culprit.nodes.front();
  DiffResult inside;
  try {
    inside = diff(body, s.inputs, options);
  } catch (const std::exception& e) {  // the compiled side may not exist for the inlined graph (a fault planted at the region)
    r.warnings.push_back(fmt::format("the culprit {} is a torch.autocast region; looking inside it failed: {}", region_name, e.what()));
    return;
  }
  const std::string where = fmt::format("inside the autocast region {} ({} {}, {} nodes, inlined)", region_name,
                                        autocast->device_type, autocast->dtype, autocast->body_nodes.size());
  size_t compiles = inside.compiles.size();
  if (inside.localization) compiles += inside.localization->compiles;
  const bool named = inside.localization && (inside.localization->culprit.kind == Culprit::Kind::SingleOp ||
                                             inside.localization->culprit.kind == Culprit::Kind::Window);
  if (!named) {
    r.warnings.push_back(fmt::format("{}: {} ({} compiles)", where,
                                     inside.localization ? inside.localization->culprit.summary
                                     : inside.diverged   ? "no localization ran"
                                                         : "the inlined graph agrees when compiled: the divergence shows only with the region compiled as one op",
                                     compiles));
    return;
  }
  Localization in = std::move(*inside.localization);
  in.culprit.summary = where + ": " + in.culprit.summary;
  in.compiles += loc.compiles + inside.compiles.size();  // the region's search, the inlined graph's compiles, its search
  in.budget += loc.budget;
  in.seconds += loc.seconds;
  in.failing_outputs = loc.failing_outputs;
  in.probes.insert(in.probes.begin(), loc.probes.begin(), loc.probes.end());
  r.localization = std::move(in);
  s.descended = true;  // its repro and hints are the inlined graph's, made by that job
}

}  // namespace pt2diff
