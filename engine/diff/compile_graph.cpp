// engine/diff/compile_graph.cpp — stage compile_graph: the whole graph through the compiler, fed the
// same inputs as eager (or the compile started ahead, compile_ahead.h, waited for); and compile_and_run,
// which every compile of the pipeline goes through.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>

#include "engine/diff/stages.h"

namespace pt2diff {

std::optional<std::vector<c10::IValue>> compile_and_run(Backend& backend, const RegionSpec& region,
                                                        const std::vector<c10::IValue>& inputs, const std::string& what,
                                                        DiffResult& result, std::optional<KernelMap>* kernel_map) {
  CompileRecord rec;
  rec.what = what;
  rec.nodes = region.nodes.size();
  std::optional<std::vector<c10::IValue>> outputs;
  const double started = backend.startup_seconds();
  try {
    auto compiled = backend.compile(region, inputs);
    rec.compile_seconds = backend.last_compile_seconds();
    outputs = compiled->run(inputs);
    rec.run_seconds = compiled->last_run_seconds();
    rec.shapes = compiled->shapes();
    rec.ok = true;
    if (kernel_map && region.observe) *kernel_map = compiled->kernel_map();
  } catch (const BackendFailure& f) {
    rec.failure = f.kind();
    rec.message = f.what();
    result.compiled_failed = true;
  }
  rec.worker_start_seconds = backend.startup_seconds() - started;  // also when the compile failed
  result.compiles.push_back(std::move(rec));
  return outputs;
}

void compile_graph(RunState& s) {
  if (s.ahead.graph.valid()) {
    s.ahead.graph.get();  // started after plan_run (compile_ahead.h); rethrows what its thread threw
    return;
  }
  compile_whole_graph(s);
}

void compile_whole_graph(RunState& s) {
  s.whole = RegionSpec::whole_graph(s.program.ir);
  // Each graph input the graph writes in place: the compiled program's value of it after the run (its region
  // returns the input, which torch.compile writes back).
  for (ValueId v : s.storage.mutated_inputs)
    if (std::find(s.whole.outputs.begin(), s.whole.outputs.end(), v) == s.whole.outputs.end()) s.whole.outputs.push_back(v);
  // The kernel map: the compiled code's own buffers, from this compile and run (judge_kernels).
  s.whole.observe = s.options.kernel_map && s.keep && s.backend.observes();
  if (s.options.kernel_map && !s.backend.observes())
    s.observed = KernelMap{"the " + s.backend.name() + " backend does not observe its compiled code", {}, {}};
  const std::vector<c10::IValue> input_values = graph_input_values(s.program, s.inputs);
  for (ValueId v : s.whole.inputs) s.whole_inputs.push_back(input_values[static_cast<size_t>(v)]);
  s.compiled = compile_and_run(s.backend, s.whole, s.whole_inputs, "graph", s.result, s.whole.observe ? &s.observed : nullptr);
}

EagerNodesRun run_with_eager_nodes(RunState& s, const std::vector<NodeId>& eager, bool suspicious_fails, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  RegionSpec region = s.whole;
  region.observe = false;
  region.eager = eager;
  EagerNodesRun a;
  auto known = s.eager_nodes_compiles.find(eager);
  a.reused = known != s.eager_nodes_compiles.end();
  if (!a.reused) {
    DiffResult scratch;  // compile_and_run marks a failed compile as the run's failure: here it is an answer
    auto outputs = compile_and_run(s.backend, region, s.whole_inputs, what, scratch);
    known = s.eager_nodes_compiles.emplace(eager, RunState::EagerNodesCompile{std::move(outputs), scratch.compiles.back()}).first;
  }
  const std::optional<std::vector<c10::IValue>>& outputs = known->second.outputs;
  auto done = [&]() {
    a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return a;
  };
  if (!outputs) {
    a.failure = known->second.record.failure;
    a.message = known->second.record.message;
    return done();
  }
  a.ran = true;
  judge_whole_outputs(s, *outputs, suspicious_fails, a);
  return done();
}

void judge_whole_outputs(const RunState& s, const std::vector<c10::IValue>& outputs, bool suspicious_fails, EagerNodesRun& a) {
  const Graph& g = s.program.ir.graph;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    if (!s.runs.native.outputs[i].isTensor()) continue;
    const c10::IValue value = compiled_output(s, i, outputs);
    auto names = s.outputs[i].arg.values();
    const std::string name = names.empty() ? fmt::format("output #{}", i) : g.value(names.front()).name;
    if (!value.isTensor()) {
      if (a.failing_output.empty()) {
        a.failing_output = name;
        a.failing_detail = "no compiled value";
      }
      continue;
    }
    std::optional<Verdict> v = judge_output(s, i, value.toTensor());
    if (!v) continue;
    if (counts_as_failing(*v, suspicious_fails) && a.failing_output.empty()) {
      a.failing_output = name;
      a.failing_detail = v->reason;
    }
    a.ratios.emplace_back(name, v->error_ratio);
    if (a.worst_output.empty() || v->error_ratio > a.worst_ratio) {
      a.worst_output = name;
      a.worst_ratio = v->error_ratio;
    }
  }
}

}  // namespace pt2diff
