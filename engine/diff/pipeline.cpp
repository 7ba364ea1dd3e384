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

const std::vector<StageInfo>& diff_stages() {
  // name, function, file, reads, adds; then the culprit's stages (from_culprit) and what may start ahead.
  static const std::vector<StageInfo> table = {
      {"plan_run", plan_run, "plan_run.cpp", "program, options, backend",
       "warnings; the storage model, the results judged, whether to explode, localize, keep values", false, start_graph_compile,
       nullptr, "the whole graph's compile, in a thread (and the exploded compile's worker starting)"},
      {"run_references", run_references, "run_references.cpp", "inputs",
       "eager, fp64 and local runs; error of every value; kept values (and each written storage after each write)", false,
       compile_exploded_ahead, "compile_exploded_ahead", "the exploded compile on its second worker, and its judgement"},
      {"compile_graph", compile_graph, "compile_graph.cpp", "inputs", "the whole graph compiled and run (`compiles[0]`)"},
      {"judge_outputs", judge_outputs, "judge_outputs.cpp", "the runs, the compiled outputs",
       "verdict per output and per written input or buffer, `diverged`"},
      {"observe_twin", observe_twin, "observe_twin.cpp", "diverged, a twin backend (an AOTI package)",
       "the kernel map of the archive compiled instrumented by the twin"},
      {"judge_kernels", judge_kernels, "judge_kernels.cpp", "the whole graph's kernel map",
       "the kernel table, its first failing kernel (`docs/kernel-map.md`)"},
      {"compile_exploded", compile_exploded, "compile_exploded.cpp", "kept values",
       "every op compiled alone (but the ones the order of writes needs): compiled local errors, suspects"},
      {"judge_nodes", judge_nodes, "judge_nodes.cpp", "compiled and eager local errors",
       "the node verdict: findings, its level (`docs/verdicts.md`, \"Node evidence\"); no compile"},
      {"trace_nonfinite", trace_nonfinite, "trace_nonfinite.cpp", "kernel table, exploded compile", "where the first NaN/Inf comes from"},
      {"localize_kernel", localize_kernel, "localize_kernel.cpp + `graphs/search/kernel_search.cpp`",
       "kernel table, kept values, exploded compile", "the op inside the first failing kernel (`kernels.inside`)"},
      {"localize_divergence", localize_divergence, "localize_divergence.cpp", "verdicts, suspects, kept values, the storage model",
       "`localization` (culprit, probes)"},
      {"localize_in_region", localize_in_region, "localize_in_region.cpp + `graphs/inline_region.cpp`",
       "a culprit that is a top-level autocast region",
       "the localization found inside it by the stages up to here run on the region inlined (`run_stages_to_culprit`), and "
       "that job (`region_job`), whose graph the culprit names"},
      {"name_node_culprit", name_node_culprit, "name_node_culprit.cpp", "node verdict, outputs that pass",
       "the first finding as culprit (`found_by: node_evidence`) and its confirmation: one compile with the findings' nodes eager"},
      {"write_culprit_repro", write_culprit_repro, "write_culprit_repro.cpp + `repro_writer.cpp`", "culprit, kept values of `culprit_job()`",
       "the repro archive and command (`to_flags`)", true},
      {"explain_culprit", explain_culprit, "explain_culprit.cpp", "culprit, kept values of `culprit_job()`", "hints", true},
      {"find_workaround", find_workaround, "find_workaround.cpp + `graphs/search/eager_set.cpp`", "verdicts, culprit, the whole graph",
       "`workaround`: the smallest eager set and the lines that leave it eager (`--workaround`)", true},
      {"search_compiler", search_compiler, "search_compiler.cpp + `graphs/search/compiler_search.cpp`",
       "verdicts, culprit, the whole graph",
       "`compiler_search`: the compiler's decision that makes the whole graph diverge, when only the whole compile does "
       "(a culprit of kind compiler_decision)", true},
      {"rank_nodes", rank_nodes, "rank_nodes.cpp", "node errors", "the ranking of introduced error", true},
  };
  return table;
}

std::string stage_table_markdown() {
  std::string out = "| stage | file | reads | adds | may start ahead once it has run |\n|---|---|---|---|---|\n";
  for (const StageInfo& st : diff_stages()) {
    std::string file = st.file;  // "a.cpp + `b.cpp`": the first in engine/diff/, in backticks too
    const size_t plus = file.find(" + ");
    file = plus == std::string::npos ? "`" + file + "`" : "`" + file.substr(0, plus) + "`" + file.substr(plus);
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", st.name, file, st.reads, st.adds, st.ahead ? st.ahead_what : "");
  }
  return out;
}

void run_stages_to_culprit(RunState& s) {
  for (const StageInfo& stage : diff_stages()) {
    if (stage.from_culprit) return;
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
  for (const StageInfo& stage : diff_stages()) {
    const auto stage_start = std::chrono::steady_clock::now();
    stage.run(state);
    // DiffOptions::overlap: what needs no more than this stage gave starts now (compile_ahead.h). Work it starts
    // elsewhere counts in the stage's time; work it does in this thread has its own record (the stage's time is
    // then its own work alone).
    if (stage.ahead && !stage.ahead_record) stage.ahead(state);
    record(stage.name, stage_start);
    const auto ahead_start = std::chrono::steady_clock::now();
    if (stage.ahead && stage.ahead_record && stage.ahead(state)) record(stage.ahead_record, ahead_start);
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
