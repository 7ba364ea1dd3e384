// engine/diff/compile_ahead.h — the compiles that need not wait for their stage (DiffOptions::overlap): the
// whole graph's compile in a thread from the end of plan_run, beside run_references (it needs the inputs
// only); every op alone (the exploded compile) on a second worker from the end of run_references (it needs
// the kept values), beside the whole graph's. The stages compile_graph and compile_exploded take the results
// in their own place, so the DiffResult is the one the run gives without overlap, but for its timings.
#pragma once

#include "engine/diff/run_state.h"

namespace pt2diff {

/// Whether this run overlaps its compiles: DiffOptions::overlap "on", or "auto" with 4 or more CPUs for this
/// process or a compiler that targets a GPU; and in either case a backend diff() made itself whose compiles
/// work in another process, and a graph that writes none of its inputs (run_references may not change what
/// the compile is sent).
bool overlaps(const RunState& s);

/// After plan_run: when overlaps(), the whole graph's compile (compile_whole_graph) starts in a thread;
/// compile_graph waits for it. Progress lines come from that thread meanwhile. When the run compiles exploded,
/// the second worker (a backend like the run's) is made and started too, in another thread
/// (Backend::start_ahead: its imports and archive load beside the reference runs).
/// Returns false: nothing ran in this thread (the stage table's `ahead` form).
bool start_graph_compile(RunState& s);

/// After run_references: when overlaps() and the run compiles exploded, the exploded compile and run on the
/// second worker (started by start_graph_compile; waited for here) in this thread, while the whole graph's compile goes
/// on, and its outputs judged (judge_exploded) as soon as they come; compile_exploded takes both
/// (RunState::ahead.exploded), enters the judgement in its own place and ends that worker. Its progress lines wait
/// until the whole graph's compile is done (one line, one compile at a time). Returns whether it ran (the
/// pipeline records its time as the stage `compile_exploded_ahead`).
bool compile_exploded_ahead(RunState& s);

}  // namespace pt2diff
