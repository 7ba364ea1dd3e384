// engine/diff/compile_graph.cpp — stage compile_graph: the whole graph through the compiler, fed the
// same inputs as eager; and compile_and_run, which every compile of the pipeline goes through.
#include "engine/diff/stages.h"

namespace pt2diff {

std::optional<std::vector<c10::IValue>> compile_and_run(Backend& backend, const RegionSpec& region,
                                                        const std::vector<c10::IValue>& inputs, const std::string& what,
                                                        DiffResult& result, std::optional<KernelMap>* kernel_map) {
  CompileRecord rec;
  rec.what = what;
  rec.nodes = region.nodes.size();
  std::optional<std::vector<c10::IValue>> outputs;
  try {
    auto compiled = backend.compile(region, inputs);
    rec.compile_seconds = backend.last_compile_seconds();
    outputs = compiled->run(inputs);
    rec.run_seconds = compiled->last_run_seconds();
    rec.ok = true;
    if (kernel_map && region.observe) *kernel_map = compiled->kernel_map();
  } catch (const BackendFailure& f) {
    rec.failure = f.kind();
    rec.message = f.what();
    result.compiled_failed = true;
  }
  result.compiles.push_back(std::move(rec));
  return outputs;
}

void compile_graph(RunState& s) {
  s.whole = RegionSpec::whole_graph(s.program.ir);
  // The kernel map: the compiled code's own buffers, from this compile and run (judge_kernels).
  s.whole.observe = s.options.kernel_map && s.keep && s.backend.observes();
  if (s.options.kernel_map && !s.backend.observes())
    s.observed = KernelMap{"the " + s.backend.name() + " backend does not observe its compiled code", {}, {}};
  const std::vector<c10::IValue> input_values = graph_input_values(s.program, s.inputs);
  for (ValueId v : s.whole.inputs) s.whole_inputs.push_back(input_values[static_cast<size_t>(v)]);
  s.compiled = compile_and_run(s.backend, s.whole, s.whole_inputs, "graph", s.result, s.whole.observe ? &s.observed : nullptr);
}

}  // namespace pt2diff
