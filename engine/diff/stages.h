// engine/diff/stages.h — the diff pipeline, one stage per file, each over one RunState (run_state.h). The stages,
// in order, with what each reads and adds and what may start ahead of its successors, are one table:
// diff_stages() (pipeline.cpp), which drives diff(), names the stage records of a report and is the table in
// docs/architecture.md (StageTable.IsTheArchitectureDocsTable checks that they are equal).
#pragma once

#include "engine/diff/run_state.h"

namespace pt2diff {

/// The backend of a run with `options` (its memory limit; progress lines labelled with the probe in `step`).
std::unique_ptr<Backend> backend_for_run(const Program& program, const DiffOptions& options, const std::shared_ptr<std::string>& step);
/// One stage of the main job, as the table declares it.
struct StageInfo {
  const char* name;            ///< its function's name: the stage record's name
  void (*run)(RunState&);
  const char* file;            ///< where it lives (engine/diff/ unless a path says otherwise)
  const char* reads;           ///< what it reads of the state, in words
  const char* adds;            ///< what it adds to the result and the state
  /// Where the culprit's stages begin: this stage and the ones after it work on culprit_job() (the repro and the
  /// hints in the graph that names the culprit); run_stages_to_culprit() stops before it.
  bool from_culprit = false;
  /// What may start once this stage has run, ahead of the stages that take its result (compile_ahead.h); nullptr
  /// when nothing. `ahead_record`: the name of its own stage record when it runs in this thread (its time is not
  /// the stage's), or nullptr when it only starts work elsewhere (its start counted in the stage's time).
  bool (*ahead)(RunState&) = nullptr;
  const char* ahead_record = nullptr;
  const char* ahead_what = "";  ///< in words, for the docs table
};

/// The main job's stages, in order.
const std::vector<StageInfo>& diff_stages();
/// docs/architecture.md's table of the stages, made from diff_stages().
std::string stage_table_markdown();
/// The main job's stages before the first `from_culprit` one, in order: what localize_in_region runs on a region
/// inlined.
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
void search_compiler(RunState& s);
void rank_nodes(RunState& s);

/// "[2, 3]": a tensor's sizes as reports show a shape (the stages' one helper).
std::string shape_of(const at::Tensor& t);

}  // namespace pt2diff
