// engine/inspect/inspect.cpp — builds the InspectReport and its text form.
#include "pt2diff/inspect.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/execution/op_catalog.h"
#include "graphs/graph_text.h"
#include "graphs/inline_region.h"
#include "graphs/memory_estimate.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

void count_ops(const Graph& g, std::map<std::string, InspectReport::Op>& ops, std::map<std::string, int64_t>& dtypes,
               InspectReport& r) {
  for (const Value& v : g.values())
    if (v.meta) ++dtypes[std::string(dtype_name(v.meta->dtype))];
  for (const Node& n : g.nodes()) {
    ++r.nodes;
    InspectReport::Op& op = ops[n.target];
    op.target = n.target;
    ++op.count;
    op.nodes.push_back(n.name);
    for (const Subgraph* s : n.subgraphs()) {
      ++r.subgraphs;
      count_ops(*s->graph, ops, dtypes, r);
    }
  }
}

std::string value_type(const Graph& g, const Argument& a) {
  auto values = a.tensor_values();
  if (a.kind == Argument::Kind::Tensor && !values.empty()) {
    const Value& v = g.value(values.front());
    return v.meta ? fmt::format("{}{}", dtype_name(v.meta->dtype), v.meta->shape_str()) : "tensor";
  }
  return fmt::format("{} {}", argument_kind_name(a.kind), argument_text(g, a));
}

std::string value_device(const Graph& g, const Argument& a) {
  auto values = a.tensor_values();
  if (a.kind == Argument::Kind::Tensor && !values.empty() && g.value(values.front()).meta)
    return g.value(values.front()).meta->device.str();
  return "";
}

std::string human_bytes(int64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  if (b < int64_t{1024} * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024 * 1024));
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}

/// The program's signature into `r`: weights counted by kind, each user and constant input, each output and its role.
void signature(const Program& p, InspectReport& r) {
  const Graph& g = p.ir.graph;
  for (size_t i = 0; i < p.ir.input_specs.size(); ++i) {
    const InputSpec& s = p.ir.input_specs[i];
    switch (s.kind) {
      case InputSpec::Kind::Parameter: ++r.parameters; break;
      case InputSpec::Kind::Buffer: ++r.buffers; break;
      case InputSpec::Kind::TensorConstant: ++r.constants; break;
      case InputSpec::Kind::CustomObj: ++r.custom_objects; break;
      case InputSpec::Kind::UserInput: {
        auto values = s.arg.values();
        std::string name = values.empty() ? fmt::format("input #{}", i) : g.value(values.front()).name;
        r.inputs.push_back({name, "user_input", value_type(g, s.arg), value_device(g, s.arg)});
        break;
      }
      case InputSpec::Kind::ConstantInput:
        r.inputs.push_back({s.target, "constant_input", fmt::format("specialized to {}", constant_str(s.constant)), ""});
        break;
      case InputSpec::Kind::Token: break;
    }
  }
  for (const OutputSpec& s : p.ir.output_specs) {
    auto values = s.arg.values();
    std::string name = values.empty() ? argument_text(g, s.arg) : g.value(values.front()).name;
    std::string role(output_kind_name(s.kind));
    if (!s.target.empty()) role += " of " + s.target;
    r.outputs.push_back({name, role, value_type(g, s.arg), value_device(g, s.arg)});
  }
}

}  // namespace

InspectReport inspect(const Program& p, const std::optional<UserInputs>& inputs) {
  InspectReport r;
  const Graph& g = p.ir.graph;
  r.path = p.path;
  r.model_name = p.model_name;
  r.torch_version = p.ir.torch_version;
  r.schema = fmt::format("{}.{}", p.ir.schema_major, p.ir.schema_minor);
  // The verifier names the dialect: TRAINING straight from torch.export.export, ATEN after run_decompositions().
  const std::string verifier = p.ir.verifiers.empty() ? "" : p.ir.verifiers.front();
  r.dialect = verifier == "TRAINING" ? "training IR" : verifier == "ATEN" ? "ATen IR (decomposed)" : verifier.empty() ? "unknown IR" : verifier;
  r.top_level_nodes = static_cast<int64_t>(g.nodes().size());
  r.export_device = p.export_device.str();

  std::map<std::string, InspectReport::Op> ops;
  count_ops(g, ops, r.dtypes, r);
  for (auto& [target, op] : ops) {
    OpClass c = classify_op(target);
    op.route = op_route_name(c.route);
    op.unsupported_reason = c.reason;
    if (c.route == OpRoute::Unsupported) r.unsupported.push_back(op);
    r.ops.push_back(std::move(op));
  }
  std::stable_sort(r.ops.begin(), r.ops.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  r.autocast = autocast_regions(g);
  for (const Node& n : g.nodes()) {
    std::string why;
    if (!autocast_region(n, why)) continue;
    if (std::optional<ExportedGraph> inlined = inline_autocast_region(p.ir, n.id, why))
      for (InlinedRegion& region : inlined_regions(inlined->graph)) r.inlined.push_back(std::move(region));
  }

  signature(p, r);
  r.weight_bytes = p.weight_bytes();
  for (const auto& [sym, rc] : p.ir.range_constraints)
    r.dynamic_dims[sym] = fmt::format("[{}, {}]", rc.min ? std::to_string(*rc.min) : "-inf", rc.max ? std::to_string(*rc.max) : "inf");
  r.has_sample_inputs = p.sample_inputs.has_value();

  const std::optional<UserInputs>& to_bind = inputs ? inputs : p.sample_inputs;
  std::map<std::string, int64_t> symbols;
  if (to_bind) {
    InspectReport::Binding b;
    b.origin = to_bind->origin;
    try {
      BoundInputs bound = bind_inputs(p, *to_bind);
      b.ok = true;
      for (const auto& e : bound.entries) b.values.emplace_back(e.name, describe(e.value));
      symbols = bound.symbols;
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::BadInputs) throw;
      b.message = e.what();
    }
    r.binding = std::move(b);
  }
  const MemoryEstimate memory = estimate_memory(g, /*exploded=*/true, symbols);
  r.memory_bytes = memory.bytes;
  r.memory_largest = memory.largest;
  return r;
}

std::string to_text(const InspectReport& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("{}  (model '{}', written by torch {}, schema {}, {})", r.path, r.model_name, r.torch_version, r.schema, r.dialect));
  if (r.subgraphs == 0)
    line(fmt::format("graph: {} nodes", r.nodes));
  else
    line(fmt::format("graph: {} nodes ({} top-level, {} in {} subgraphs)", r.nodes, r.top_level_nodes, r.nodes - r.top_level_nodes,
                     r.subgraphs));
  if (r.export_device != "cpu")
    line(fmt::format("exported on {}: pt2diff runs it on the CPU (baked devices rewritten, CUDA-only attention as math "
                     "attention); a compiler targets {} unless --device says otherwise", r.export_device, r.export_device));
  auto table = [&](const char* title, const std::vector<InspectReport::Tensor>& rows) {
    line(fmt::format("{} ({}):", title, rows.size()));
    size_t w = 4;
    for (const auto& t : rows) w = std::max(w, t.name.size());
    for (const auto& t : rows)
      line(fmt::format("  {:<{}}  {:<16} {}{}", t.name, w, t.role, t.type, t.device.empty() ? "" : "  " + t.device));
  };
  table("inputs", r.inputs);
  table("outputs", r.outputs);
  line(fmt::format("weights: {} parameters, {} buffers, {} constants{}, {}", r.parameters, r.buffers, r.constants,
                   r.custom_objects ? fmt::format(", {} custom objects", r.custom_objects) : "", human_bytes(r.weight_bytes)));
  std::vector<std::string> dtypes;
  for (const auto& [d, n] : r.dtypes) dtypes.push_back(fmt::format("{} ×{}", d, n));
  line(fmt::format("tensor dtypes: {}", dtypes.empty() ? "none" : fmt::format("{}", fmt::join(dtypes, ", "))));
  if (!r.dynamic_dims.empty()) {
    std::vector<std::string> dims;
    for (const auto& [s, range] : r.dynamic_dims) dims.push_back(s + " in " + range);
    line(fmt::format("dynamic dims: {}", fmt::join(dims, ", ")));
  }
  line(fmt::format("ops ({} distinct):", r.ops.size()));
  size_t w = 4;
  for (const auto& op : r.ops) w = std::max(w, short_target(op.target).size());
  for (const auto& op : r.ops) line(fmt::format("  {:>5}  {:<{}}  {}", op.count, short_target(op.target), w, op.route));
  if (r.unsupported.empty()) {
    line("unsupported ops: none");
  } else {
    line(fmt::format("unsupported ops ({}): pt2diff cannot run these nodes", r.unsupported.size()));
    for (const auto& op : r.unsupported) {
      std::vector<std::string> shown(op.nodes.begin(), op.nodes.begin() + static_cast<long>(std::min<size_t>(op.nodes.size(), 5)));
      line(fmt::format("  {} ×{}: {} (nodes: {}{})", short_target(op.target), op.count, op.unsupported_reason, fmt::join(shown, ", "),
                       op.nodes.size() > shown.size() ? ", ..." : ""));
    }
  }
  if (!r.autocast.empty()) {
    line(fmt::format("autocast regions ({}): the native run runs these bodies under autocast, the fp64 run ignores its casts",
                     r.autocast.size()));
    for (const AutocastRegion& a : r.autocast) line("  " + autocast_summary(a));
  }
  if (!r.binding) {
    line("inputs: none given and the archive has no readable sample inputs (pass INPUTS or --random-inputs)");
  } else if (r.binding->ok) {
    std::vector<std::string> vals;
    for (const auto& [n, d] : r.binding->values) vals.push_back(n + " = " + d);
    line(fmt::format("inputs bind: yes ({}: {})", r.binding->origin, fmt::join(vals, ", ")));
  } else {
    line(fmt::format("inputs bind: NO: {}", r.binding->message));
  }
  return out;
}

}  // namespace pt2diff
