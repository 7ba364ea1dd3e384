// engine/diff/observe_twin.cpp — stage observe_twin: a compiled side that cannot be observed (an AOTInductor
// package) and whose outputs disagree gets its kernel table from its twin, the archive it came from
// compiled by AOTInductor with the kernel map on (TwinBackend). From then on the backend compiles regions
// through the twin, so the op inside the kernel and localization run as for `--compiled aoti`. When the
// twin's own outputs agree, the report says the package's divergence is not this compiler's on this archive.

#include "engine/backends/backends.h"
#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

void observe_twin(RunState& s) {
  auto* twin = dynamic_cast<TwinBackend*>(&s.backend);
  DiffResult& r = s.result;
  if (!twin || !s.observed || !s.options.kernel_map || !s.keep || !s.compiled || !r.diverged) return;
  Backend* backend = nullptr;
  try {
    backend = &twin->engage_twin();
  } catch (const BackendFailure& f) {
    s.observed = KernelMap{wording::twin_not_compiled(f.what()), {}, {}};
    return;
  }
  RegionSpec whole = s.whole;
  whole.observe = true;
  DiffResult scratch;  // the twin failing is not the package failing: its record is kept, the verdict untouched
  std::optional<KernelMap> map;
  auto outputs = compile_and_run(*backend, whole, s.whole_inputs, "instrumented", scratch, &map);
  r.compiles.push_back(scratch.compiles.back());
  if (!outputs || !map) {
    s.observed = KernelMap{wording::twin_failed(twin->twin_description(), scratch.compiles.back().message), {}, {}};
    return;
  }
  s.observed = std::move(*map);
  // Does the twin reproduce the package's divergence? Judged output by output with the run's rule.
  std::vector<std::string> package_fails, twin_fails;
  for (const OutputVerdict& ov : r.outputs)
    if (!ov.verdict.pass) package_fails.push_back(ov.name);
  const Graph& g = s.program.ir.graph;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    auto values = s.outputs[i].arg.values();
    const c10::IValue value = compiled_output(s, i, *outputs);
    if (values.empty() || !value.isTensor()) continue;
    if (auto v = judge_output(s, i, value.toTensor()); v && !v->pass) twin_fails.push_back(g.value(values.front()).name);
  }
  if (twin_fails.empty()) {
    r.warnings.push_back(wording::twin_agrees(package_fails, twin->twin_description()));
    return;
  }
  twin->route_regions_to_twin();
  r.warnings.push_back(wording::twin_observed(twin->twin_description(), twin_fails));
}

}  // namespace pt2diff
