// engine/diff/pipeline.cpp — implements diff.h's diff() and explain() as lists of stages (stages.h):
// load → IR → runs → comparison → localization → hints → report, one way.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <set>

#include "engine/diff/compile_ahead.h"
#include "engine/diff/stages.h"
#include "engine/execution/device_memory.h"
#include "engine/execution/math_settings.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

using Stage = void (*)(RunState&);
struct NamedStage {
  const char* name;
  Stage run;
};
#define PT2DIFF_STAGE(f) NamedStage{#f, f}

/// The main job, in order. Each stage reads what the ones before it added to the state.
constexpr NamedStage kDiffStages[] = {
    PT2DIFF_STAGE(plan_run),             // what this graph and backend allow
    PT2DIFF_STAGE(run_references),       // eager, fp64 and local runs in lockstep; error of every value
    PT2DIFF_STAGE(compile_graph),        // the whole graph through the compiler
    PT2DIFF_STAGE(judge_outputs),        // compiled vs eager, fp64 as referee
    PT2DIFF_STAGE(observe_twin),         // a package that disagrees: the archive compiled instrumented (its kernel map)
    PT2DIFF_STAGE(judge_kernels),        // the compiled code's own buffers, kernel by kernel
    PT2DIFF_STAGE(compile_exploded),     // every op alone through the compiler: compiled local errors, suspects
    PT2DIFF_STAGE(judge_nodes),          // the node verdict: nodes whose compiled local error stands out against eager's
    PT2DIFF_STAGE(trace_nonfinite),      // where the compiled code's first NaN/Inf comes from
    PT2DIFF_STAGE(localize_kernel),      // the op inside the first failing kernel
    PT2DIFF_STAGE(localize_divergence),  // bisect a divergence to its first op or window
    PT2DIFF_STAGE(localize_in_region),   // a culprit that is an autocast region: the stages to here on the region inlined
    PT2DIFF_STAGE(name_node_culprit),    // outputs pass but a node stands out: it is the culprit, confirmed by one compile
    PT2DIFF_STAGE(write_culprit_repro),  // the culprit as a standalone archive and command (in its job's graph)
    PT2DIFF_STAGE(explain_culprit),      // hints: promotion, reduction order, compiler levers (in its job's graph)
    PT2DIFF_STAGE(find_workaround),      // the smallest eager set and the lines that leave it eager (--workaround)
    PT2DIFF_STAGE(rank_nodes),           // where error is introduced
};

#undef PT2DIFF_STAGE

}  // namespace

void run_stages_to_culprit(RunState& s) {
  for (const NamedStage& stage : kDiffStages) {
    if (stage.run == write_culprit_repro) return;
    stage.run(s);
  }
}

std::unique_ptr<Backend> backend_for_run(const Program& program, const DiffOptions& options, const std::shared_ptr<std::string>& step) {
  BackendOptions backend_options = options.backend;
  if (backend_options.memory_limit == 0) backend_options.memory_limit = memory_limit_for(options.max_memory);
  // Overlapped on a GPU, the engine's runs are the critical path and need one core at a time (BackendOptions::nice).
  if (backend_options.nice == 0 && options.overlap != "off" && backend_options.device.rfind("cuda", 0) == 0) backend_options.nice = 10;
  if (options.backend.on_wait)
    backend_options.on_wait = [step, user = options.backend.on_wait](const std::string& activity, double elapsed) {
      user(step->empty() ? activity : "[" + *step + "] " + activity, elapsed);
    };
  return make_backend(options.compiled, program, backend_options);
}

namespace {

DiffResult run_diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend,
                    std::shared_ptr<std::string> step, bool owns_backend) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t start_host_bytes = host_resident_bytes(false);
  RunState state(program, inputs, options, backend, std::move(step));
  state.owns_backend = owns_backend;
  const MathSettingsScope math(options.backend);  // the user's TF32 / matmul precision, for the eager runs too
  int64_t peak_gpu = -1;
  // Each stage's own time and GPU peak (plan_run chose the device and reset the counter), the run's the most of them.
  auto record = [&](const char* name, std::chrono::steady_clock::time_point since) {
    const Device native = parse_device(state.result.devices.native);
    StageRecord r{name, std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count(), gpu_peak_bytes(native),
                  host_resident_bytes(false)};
    peak_gpu = std::max(peak_gpu, r.peak_gpu_bytes);
    if (r.peak_gpu_bytes >= 0) reset_gpu_peak(native);
    state.result.stages.push_back(std::move(r));
  };
  for (const NamedStage& stage : kDiffStages) {
    const auto stage_start = std::chrono::steady_clock::now();
    stage.run(state);
    // DiffOptions::overlap: the compiles that need no more than this stage gave them start now (compile_ahead.h).
    if (stage.run == plan_run) start_graph_compile(state);
    record(stage.name, stage_start);
    // The exploded compile started ahead waits for its worker and runs in this thread: its own record, not
    // run_references' (whose time is then the lockstep runs alone).
    const auto ahead_start = std::chrono::steady_clock::now();
    if (stage.run == run_references && compile_exploded_ahead(state)) record("compile_exploded_ahead", ahead_start);
  }
  state.result.devices.peak_gpu_bytes = peak_gpu;
  state.result.devices.start_host_bytes = start_host_bytes;
  state.result.devices.peak_host_bytes = host_resident_bytes(true);
  state.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(state.result);
}

/// The nodes from `first` to `last` (graph order) that `last` depends on.
std::vector<NodeId> window_nodes(const Graph& g, const Node& begin, const Node& end) {
  std::set<NodeId> needed = {end.id};
  for (NodeId id = end.id; id >= begin.id && id != kGraphInput; --id) {
    if (!needed.count(id)) continue;
    for (ValueId v : g.node(id).input_values())
      if (NodeId p = g.value(v).producer; p != kGraphInput && p >= begin.id) needed.insert(p);
    if (id == 0) break;
  }
  return {needed.begin(), needed.end()};
}

}  // namespace

DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options) {
  // Progress lines during localization say which probe a compile belongs to.
  auto step = std::make_shared<std::string>();
  std::unique_ptr<Backend> backend = backend_for_run(program, options, step);
  return run_diff(program, inputs, options, *backend, step, true);
}

DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend) {
  return run_diff(program, inputs, options, backend, std::make_shared<std::string>(), false);
}

std::vector<Hint> explain(const Program& program, const BoundInputs& inputs, const std::string& first, const DiffOptions& options,
                          const std::string& last) {
  const Graph& g = program.ir.graph;
  auto find = [&](const std::string& name) -> const Node& {
    for (const Node& n : g.nodes())
      if (n.name == name) return n;
    throw Error(Error::Kind::Usage, fmt::format("no node named '{}' in {} (see pt2diff inspect --graph)", name, program.path));
  };
  const Node& begin = find(first);
  const Node& end = last.empty() ? begin : find(last);
  if (end.id < begin.id)
    throw Error(Error::Kind::Usage, fmt::format("the window's last node '{}' comes before its first '{}' in graph order", end.name, begin.name));
  auto step = std::make_shared<std::string>();
  std::unique_ptr<Backend> backend = backend_for_run(program, options, step);
  RunState state(program, inputs, options, *backend, step);
  const MathSettingsScope math(options.backend);
  plan_run(state);
  state.keep = true;  // the window is fed kept values, whatever the options say
  run_references(state);
  Culprit window;
  for (NodeId id : window_nodes(g, begin, end)) window.nodes.push_back(g.node(id).name);
  for (ValueId v : end.output_values())
    if (state.reference.fp64_of(v).isTensor()) {
      window.value = g.value(v).name;
      break;
    }
  return explain_window(state, window);
}

}  // namespace pt2diff
