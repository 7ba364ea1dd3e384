// engine/diff/stages.h — the diff pipeline, one stage per file, each over one RunState (run_state.h).
// diff() runs them in this order (pipeline.cpp); explain() runs the first two and explain_window().
//
//   stage                 reads                               adds
//   plan_run              program, options, backend           warnings; mutating, storage, outputs, exploded, bisect
//   run_references        inputs                              eager, fp64 and local runs: result.nodes (errors
//                                                             per value), fix-ups, random nodes; kept values
//   compile_graph         inputs                              the whole graph compiled and run; compiles[0]
//   judge_outputs         runs, compiled                      result.outputs (verdicts), result.diverged
//   observe_twin          diverged, a TwinBackend (a package) the kernel map from its twin's instrumented compile
//                                                             of the archive; compiles[+1] "instrumented"
//   compile_exploded      kept values                         every op compiled alone: compiled local errors,
//                                                             exploded suspects; compiles[1]
//   judge_nodes           compiled local errors               result.node_verdict (nodes that stand out against
//                                                             eager's local error: evidence whatever the outputs say)
//   localize_kernel       kernel table, kept values           kernels.inside (the op inside the first failing kernel)
//   localize_divergence   verdicts, suspects, kept values     result.localization (culprit, probes)
//   localize_in_region    culprit (an autocast region)        result.localization from the job on the region inlined,
//                                                             region_job (that job, for the culprit's stages)
//   name_node_culprit     node verdict, outputs passing       result.localization from the node evidence (no search),
//                                                             confirmed by one compile with the nodes eager
//   write_culprit_repro   culprit_job(): culprit, kept values localization.repro (DiffOptions::repro_dir)
//   explain_culprit       culprit_job(): culprit, kept values localization.hints
//   find_workaround       verdicts, culprit, whole graph       result.workaround (the smallest eager set; --workaround)
//   rank_nodes            result.nodes                        result.ranking
#pragma once

#include "engine/diff/run_state.h"

namespace pt2diff {

/// The backend of a run with `options` (its memory limit; progress lines labelled with the probe in `step`).
std::unique_ptr<Backend> backend_for_run(const Program& program, const DiffOptions& options, const std::shared_ptr<std::string>& step);
/// The main job's stages before write_culprit_repro, in order: what localize_in_region runs on a region inlined.
void run_stages_to_culprit(RunState& s);

void plan_run(RunState& s);
/// The nodes the exploded compile leaves out, where the graph writes in place: each writing node, and each node
/// reading a value written after it was made (a placeholder fed once cannot stand for two states of one storage).
/// Localization windows judge those, with the writes.
std::vector<NodeId> left_out_of_exploded(const Graph& g, const StorageModel& m);
void run_references(RunState& s);
void compile_graph(RunState& s);
void judge_outputs(RunState& s);
void observe_twin(RunState& s);
void judge_kernels(RunState& s);
void compile_exploded(RunState& s);
void judge_nodes(RunState& s);
void trace_nonfinite(RunState& s);
void localize_kernel(RunState& s);
void localize_divergence(RunState& s);
void localize_in_region(RunState& s);
void name_node_culprit(RunState& s);
void write_culprit_repro(RunState& s);
void explain_culprit(RunState& s);
void find_workaround(RunState& s);
void rank_nodes(RunState& s);

/// "[2, 3]": a tensor's sizes as reports show a shape (the stages' one helper).
std::string shape_of(const at::Tensor& t);

}  // namespace pt2diff
