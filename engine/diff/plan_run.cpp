// engine/diff/plan_run.cpp — stage plan_run: what this graph and backend allow, where the runs go (CPU or
// GPU, and the fp64 run's device), and what the report must say up front (in-place mutation, a GPU
// export run on the CPU).
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"
#include "engine/execution/device_memory.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

/// What running a GPU export on the CPU changes, grouped by kind: "device cuda:0 -> cpu: arange, full".
std::string cpu_run_warning(const Program& program, const std::vector<DeviceRewrite>& rewrites) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_kind;
  for (const DeviceRewrite& rw : rewrites) {
    auto it = std::find_if(by_kind.begin(), by_kind.end(), [&](const auto& k) { return k.first == rw.what; });
    if (it == by_kind.end()) it = by_kind.insert(by_kind.end(), {rw.what, {}});
    it->second.push_back(rw.node);
  }
  std::vector<std::string> kinds;
  for (const auto& [what, nodes] : by_kind) kinds.push_back(fmt::format("{} ({})", what, fmt::join(nodes, ", ")));
  return wording::exported_elsewhere(program.export_device.str(), program.export_device.type, kinds);
}

/// "cuda" → "cuda:0": reports name the GPU the runs used.
Device indexed(Device d) {
  if (d.type == "cuda" && d.index < 0) d.index = 0;
  return d;
}

/// Where the engine's runs go (DiffResult::devices), refusing a run that would not fit before anything
/// is allocated: eager, local and region runs on --device; fp64 on --reference-device, or for "auto"
/// on the GPU when the estimate of every run fits in --gpu-memory (default: what the GPU has free),
/// else on the CPU.
void place_runs(RunState& s) {
  RunDevices& d = s.result.devices;
  const Device native = indexed(parse_device(s.options.backend.device));
  require_device(native);
  const Graph& g = s.program.ir.graph;
  if (native.type == "cpu") {
    check_memory(g, s.exploded, s.options.max_memory, s.inputs.symbols);
    return;
  }
  const std::string& asked = s.options.reference_device;
  if (asked != "auto" && asked != "cpu" && asked != "cuda")
    throw Error(Error::Kind::Usage, fmt::format("--reference-device {}: use auto, cpu or cuda", asked));
  const MemoryEstimate e = estimate_memory(g, s.exploded, s.inputs.symbols);
  std::optional<double> limit;
  std::string limit_name;
  if (s.options.gpu_memory > 0) {
    limit = static_cast<double>(s.options.gpu_memory);
    limit_name = fmt::format("--gpu-memory {}", format_bytes(*limit));
  } else if (s.options.gpu_memory == 0) {
    if (auto info = gpu_memory_info(native)) {
      limit = static_cast<double>(info->first);
      limit_name = fmt::format("the {} free on {}", format_bytes(*limit), native.str());
    }
  }
  if (limit && e.native_bytes > *limit)
    throw Error(Error::Kind::Usage,
                fmt::format("the eager runs on {} would hold about {} (the largest value: {}), more than {}: allow more with "
                            "--gpu-memory SIZE (or none), run on the CPU with --device cpu, or use smaller inputs",
                            native.str(), format_bytes(e.native_bytes), e.largest, limit_name));
  Device reference = native;
  if (asked == "cpu") {
    reference = Device{};
    d.why = "--reference-device cpu";
  } else if (asked == "cuda") {
    d.why = "--reference-device cuda";
  } else if (!limit) {
    d.why = s.options.gpu_memory < 0 ? "auto: --gpu-memory none" : "auto: this torch cannot tell the GPU's free memory";
  } else if (e.native_bytes + e.reference_bytes <= *limit) {
    d.why = wording::references_fit(e.native_bytes, e.reference_bytes, limit_name);
  } else {
    reference = Device{};
    d.why = wording::reference_on_the_cpu(e.native_bytes, e.reference_bytes, limit_name);
  }
  // The host holds a CPU reference's values: refuse one that would not fit there either.
  if (reference.type == "cpu" && s.options.max_memory >= 0) {
    const std::optional<int64_t> host = s.options.max_memory > 0 ? std::optional<int64_t>(s.options.max_memory) : available_memory();
    if (host && e.reference_bytes > static_cast<double>(*host))
      throw Error(Error::Kind::Usage, fmt::format("the fp64 run on the CPU would hold about {}, more than {}: allow more with "
                                                  "--max-memory SIZE (or none), or use smaller inputs",
                                                  format_bytes(e.reference_bytes), format_bytes(static_cast<double>(*host))));
  }
  d.native = native.str();
  d.reference = reference.str();
  s.interpreter.set_devices(native, reference);
  reset_gpu_peak(native);
}

/// The result "graph input `v` after the graph": its kind from the input's (a buffer, a parameter, a user input).
OutputSpec mutated_input_spec(const Program& program, ValueId v) {
  OutputSpec spec;
  spec.arg.kind = Argument::Kind::Tensor;
  spec.arg.payload = v;
  const std::string& name = program.ir.graph.value(v).name;
  spec.kind = OutputSpec::Kind::UserInputMutation;
  spec.target = name;
  for (const InputSpec& in : program.ir.input_specs)
    if (in.arg.values() == std::vector<ValueId>{v}) {
      if (in.kind == InputSpec::Kind::Buffer) spec.kind = OutputSpec::Kind::BufferMutation;
      if (in.kind == InputSpec::Kind::Parameter) spec.kind = OutputSpec::Kind::ParameterMutation;
      if (!in.target.empty()) spec.target = in.target;
    }
  return spec;
}

}  // namespace

std::string default_device(const Program& program) {
  return program.export_device.type == "cuda" && cuda_present() ? program.export_device.str() : "cpu";
}

void plan_run(RunState& s) {
  DiffResult& r = s.result;
  r.graph = s.program.path;
  r.inputs = s.inputs.origin;
  r.compiled = s.backend.name();
  r.rule = s.options.rule;
  s.interpreter.set_seed(s.options.backend.seed);  // the compiled side is seeded alike, every run
  // Kept values are copied where an op writes in place (a later write would change them), and the storage model
  // keeps the program's order: a read sees the writes before it, and each write into a graph input makes that
  // input's value after the graph a result (engine/diff/run_references.cpp).
  s.mutating = s.interpreter.mutates_inputs();  // scans every kernel: once
  s.storage = s.interpreter.storage_model();
  s.outputs = s.program.ir.output_specs;
  for (ValueId v : s.storage.mutated_inputs)  // one the graph returns is judged as it returns it
    if (!s.program.ir.graph.value(v).is_graph_output) s.outputs.push_back(mutated_input_spec(s.program, v));
  s.exploded = s.options.exploded && s.backend.compiles_regions();
  if (const std::vector<NodeId> left = left_out_of_exploded(s.program.ir.graph, s.storage); s.exploded && !left.empty()) {
    std::vector<std::string> names;
    for (NodeId id : left) names.push_back(s.program.ir.graph.node(id).name);
    r.warnings.push_back(wording::left_out_of_exploded(names));
  }
  s.bisect = s.options.localize.enabled;
  s.keep = s.exploded || (s.bisect && s.backend.compiles_regions()) || (s.options.kernel_map && s.backend.observes());
  place_runs(s);
  if (s.program.export_device.type != "cpu" && r.devices.native == "cpu")
    r.warnings.push_back(cpu_run_warning(s.program, s.interpreter.device_rewrites()));
}

}  // namespace pt2diff
