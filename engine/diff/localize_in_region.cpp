// engine/diff/localize_in_region.cpp — stage localize_in_region: when localization names a top-level
// torch.autocast region (a training-IR `wrap_with_autocast` node, which may hold a whole model), the
// search goes inside it. The region is inlined (graphs/inline_region.h: each body op a top-level node
// under the region's autocast, in pt2diff's runs and in the worker's compiles alike) and the main job's
// stages up to the culprit run again on that graph (a sub-pipeline: run_stages_to_culprit), whose
// localization then stands for the run's: the op inside the region. The job is kept in the state
// (RunState::region_job) for the stages after this one, which make the culprit's repro and hints in its
// graph. The extra cost is that job's compiles (the inlined graph whole, its exploded ops, the probes).

#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"
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
    r.warnings.push_back(wording::autocast_region_closed(culprit.nodes.front(), why));
    return;
  }
  const std::string region_name = culprit.nodes.front();
  auto job = std::make_shared<RegionJob>();
  job->program = s.program;  // weights and inputs are shared, not copied
  job->program.ir = std::move(*inlined);
  job->options = s.options;
  job->options.workaround.enabled = false;  // the run's own stage searches, on the graph as exported
  if (s.options.backend.on_wait)
    job->options.backend.on_wait = [user = s.options.backend.on_wait, label = "[inside " + region_name + "] "](
                                       const std::string& activity, double elapsed) { user(label + activity, elapsed); };
  job->step = std::make_shared<std::string>();
  try {
    job->backend = backend_for_run(job->program, job->options, job->step);
    job->state = std::make_unique<RunState>(job->program, s.inputs, job->options, *job->backend, job->step);
    run_stages_to_culprit(*job->state);
  } catch (const std::exception& e) {  // the compiled side may not exist for the inlined graph (a fault planted at the region)
    r.warnings.push_back(wording::autocast_region_failed(region_name, e.what()));
    return;
  }
  const DiffResult& inside = job->state->result;
  const std::string where = wording::inside_autocast_region(region_name, *autocast);
  size_t compiles = inside.compiles.size();
  if (inside.localization) compiles += inside.localization->compiles;
  const bool named = inside.localization && inside.localization->culprit.named();
  if (!named) {
    r.warnings.push_back(wording::autocast_region_unnamed(where, inside, compiles));
    return;
  }
  // The run's localization is the one found inside, its probes after the region's; the job stays for the
  // culprit's repro and hints, which are made in its graph (RunState::culprit_job()).
  Localization in = *inside.localization;
  in.culprit.summary = where + ": " + in.culprit.summary;
  in.compiles += loc.compiles + inside.compiles.size();  // the region's search, the inlined graph's compiles, its search
  in.budget += loc.budget;
  in.seconds += loc.seconds;
  in.failing_outputs = loc.failing_outputs;
  in.probes.insert(in.probes.begin(), loc.probes.begin(), loc.probes.end());
  r.localization = std::move(in);
  s.region_job = std::move(job);
}

}  // namespace pt2diff
