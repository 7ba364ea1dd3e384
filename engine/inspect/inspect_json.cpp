// engine/inspect/inspect_json.cpp — the InspectReport as JSON (docs/inspect.schema.json), declared once
// (graphs/json_fields.h): the writer and the schema are read off the description below.
#include <nlohmann/json.hpp>

#include "engine/inspect/autocast_json.h"
#include "graphs/json_fields.h"
#include "pt2diff/inspect.h"

namespace pt2diff::json_fields {

Object<AutocastRegion> describe(Tag<AutocastRegion>) {
  using F = Fields<AutocastRegion>;
  return Object<AutocastRegion>(
      "", {F::of("node", &AutocastRegion::node), F::of("device_type", &AutocastRegion::device_type),
           F::of("dtype", &AutocastRegion::dtype, "the autocast dtype: bfloat16, float16"),
           F::of("enabled", &AutocastRegion::enabled, "false: a region turning autocast off"),
           F::of("cache_enabled", &AutocastRegion::cache_enabled),
           F::of("depth", &AutocastRegion::depth, "0: in the top-level graph; n: inside n higher-order ops' bodies")
               .at_least(0),
           F::of("body_nodes", &AutocastRegion::body_nodes)});
}

/// The names an inlined region's body nodes and values take (graphs/inline_region.h).
struct InlinedNames {
  std::vector<std::pair<std::string, std::string>> nodes, values;
};

Object<InlinedNames> describe(Tag<InlinedNames>) {
  using F = Fields<InlinedNames>;
  return Object<InlinedNames>("", {F::of("nodes", &InlinedNames::nodes), F::of("values", &InlinedNames::values)});
}

static std::map<std::string, InlinedNames> inlined_names(const std::vector<InlinedRegion>& regions) {
  std::map<std::string, InlinedNames> out;
  for (const InlinedRegion& r : regions) out[r.region] = {r.nodes, r.values};
  return out;
}

Object<InspectReport::Tensor> describe(Tag<InspectReport::Tensor>) {
  using F = Fields<InspectReport::Tensor>;
  using T = InspectReport::Tensor;
  return Object<InspectReport::Tensor>(
      "tensor", {F::of("name", &T::name, "graph name ('x') or constant name ('temperature')"),
                 F::of("role", &T::role, "user_input, constant_input, user_output, buffer_mutation of NAME, ..."),
                 F::of("type", &T::type, "'float32[4, 32]', 'float32[s77, 16]', 'specialized to 0.5'"),
                 F::of("device", &T::device, "'cpu', 'cuda:0', or '' for non-tensors")});
}

Object<InspectReport::Op> describe(Tag<InspectReport::Op>) {
  using F = Fields<InspectReport::Op>;
  using Op = InspectReport::Op;
  return Object<InspectReport::Op>(
      "op", {F::of("target", &Op::target, "torch.ops.aten.linear.default"),
             F::of("count", &Op::count, "nodes calling it, subgraphs included"),
             F::of("route", &Op::route,
                   one_of({"dispatcher", "higher-order (subgraphs)", "scalar (C++)", "math attention (CUDA-only op)",
                           "unsupported"})),
             F::of("unsupported_reason", &Op::unsupported_reason, "empty unless route is unsupported"),
             F::of("nodes", &Op::nodes, "names of the nodes calling it")});
}

Object<InspectReport::Binding> describe(Tag<InspectReport::Binding>) {
  using F = Fields<InspectReport::Binding>;
  using B = InspectReport::Binding;
  return Object<InspectReport::Binding>(
      "", {F::of("origin", &B::origin, "inputs file, 'sample inputs' or 'random (seed N)'"), F::of("ok", &B::ok),
           F::of("message", &B::message, "the bind error when ok is false"),
           F::of("values", &B::values, "each input by name: what was bound to it")});
}

/// The weights' counts and bytes, as one object of the document.
struct Weights {
  int64_t parameters, buffers, constants, custom_objects, bytes;
};

Object<Weights> describe(Tag<Weights>) {
  using F = Fields<Weights>;
  return Object<Weights>(
      "", {F::of("parameters", &Weights::parameters).at_least(0), F::of("buffers", &Weights::buffers).at_least(0),
           F::of("constants", &Weights::constants).at_least(0),
           F::of("custom_objects", &Weights::custom_objects).at_least(0),
           F::of("bytes", &Weights::bytes, "distinct storages, shared ones counted once").at_least(0)});
}

/// What the main job's runs would hold at once, as one object of the document.
struct Memory {
  double bytes;
  std::string largest;
};

Object<Memory> describe(Tag<Memory>) {
  using F = Fields<Memory>;
  return Object<Memory>(
      "", {F::of("bytes", &Memory::bytes, finite_type()).at_least(0), F::of("largest", &Memory::largest)},
      "what the main job's runs would hold at once (the --max-memory estimate, exploded compile included)");
}

Object<InspectReport> describe(Tag<InspectReport>) {
  using F = Fields<InspectReport>;
  using R = InspectReport;
  return Object<InspectReport>(
      "",
      {F::of("path", &R::path),
       F::of("model", &R::model_name, "which models/<name>.json was read"),
       F::of("torch_version", &R::torch_version, "the torch that wrote the archive"),
       F::of("schema", &R::schema, "export schema 'major.minor'"),
       F::of("dialect", &R::dialect, "'training IR' or 'ATen IR (decomposed)'"),
       F::of("nodes", &R::nodes).at_least(0),
       F::of("top_level_nodes", &R::top_level_nodes).at_least(0),
       F::of("subgraphs", &R::subgraphs).at_least(0),
       F::of("export_device", &R::export_device,
             "where the graph was exported: 'cpu' or 'cuda:0'; the default device of pt2diff's runs where this machine "
             "has it, else the CPU"),
       F::of("inputs", &R::inputs),
       F::of("outputs", &R::outputs),
       F::computed(
           "weights",
           [](const R& r) { return Weights{r.parameters, r.buffers, r.constants, r.custom_objects, r.weight_bytes}; }),
       F::of("dtypes", &R::dtypes, "dtype -> tensor values"),
       F::of("dynamic_dims", &R::dynamic_dims, "symbol -> '[min, max]'"),
       F::of("ops", &R::ops),
       F::of("unsupported", &R::unsupported),
       F::of("autocast", &R::autocast,
             "torch.autocast regions (wrap_with_autocast nodes) and the nodes of their bodies"),
       F::computed(
           "inlined", [](const R& r) { return inlined_names(r.inlined); },
           "per top-level autocast region that can be inlined: the name each body op node and each body value "
           "takes when localization goes inside it (graphs/inline_region.h), body name -> name in reports; a "
           "worker's load request carries the same (docs/worker-protocol.md)"),
       F::of("has_sample_inputs", &R::has_sample_inputs),
       F::computed("memory", [](const R& r) { return Memory{r.memory_bytes, r.memory_largest}; }),
       F::of("binding", &R::binding, "the inputs bound: the given ones, else the sample inputs; null when neither")},
      "What `pt2diff inspect --json` writes: what the archive holds and whether pt2diff can run it (docs/usage.md).");
}

}  // namespace pt2diff::json_fields

namespace pt2diff {

nlohmann::json autocast_json(const std::vector<AutocastRegion>& regions) { return json_fields::write_value(regions); }

nlohmann::json inlined_json(const std::vector<InlinedRegion>& regions) {
  return json_fields::write_value(json_fields::inlined_names(regions));
}

std::string to_json(const InspectReport& r) { return json_fields::write_value(r).dump(2) + "\n"; }

std::string inspect_json_schema() {
  return json_fields::document_schema("pt2diff inspect --json", json_fields::object_of<InspectReport>()).dump(2) + "\n";
}

}  // namespace pt2diff
