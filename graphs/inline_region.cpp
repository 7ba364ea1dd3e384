// graphs/inline_region.cpp — inline_autocast_region (inline_region.h).
#include "graphs/inline_region.h"

#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace pt2diff {

namespace {

using Map = std::unordered_map<ValueId, ValueId>;

ValueId mapped(const Map& m, ValueId v) {
  if (v == kNoValue) return v;
  auto it = m.find(v);
  return it == m.end() ? std::numeric_limits<ValueId>::max() : it->second;  // unmapped: finalize() throws on it
}

SymArg remap(SymArg s, const Map& m) {
  if (!s.is_literal()) s.value = mapped(m, s.value);
  return s;
}

/// `a` with every value it refers to replaced through `m` (subgraphs are self-contained: kept as they are).
Argument remap(const Argument& a, const Map& m) {
  Argument out = a;
  std::visit(
      [&](auto& p) {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, ValueId>) {
          p = mapped(m, p);
        } else if constexpr (std::is_same_v<T, std::vector<ValueId>>) {
          for (ValueId& v : p) v = mapped(m, v);
        } else if constexpr (std::is_same_v<T, std::vector<std::vector<ValueId>>>) {
          for (auto& list : p)
            for (ValueId& v : list) v = mapped(m, v);
        } else if constexpr (std::is_same_v<T, SymArg>) {
          p = remap(p, m);
        } else if constexpr (std::is_same_v<T, std::vector<SymArg>>) {
          for (SymArg& s : p) s = remap(s, m);
        } else if constexpr (std::is_same_v<T, std::vector<NamedArgument>>) {
          for (NamedArgument& n : p) n.arg = remap(n.arg, m);
        }
      },
      out.payload);
  return out;
}

ValueId copy_value(Graph& g, const Value& v, const std::string& name) {
  const ValueId id = g.add_value(name, v.kind, v.meta);
  g.mutable_value(id).sym_hint = v.sym_hint;
  return id;
}

}  // namespace

std::string inlined_name(const std::string& name, const std::string& region, bool taken) {
  return taken ? name + "_" + region : name;
}

namespace {

/// The region's operands, flattened as the autocast kernel passes them; nullopt (and `why`) when one is a literal or
/// they do not match the body's inputs and outputs.
std::optional<std::vector<ValueId>> region_operands(const Node& r, const Graph& body, std::string& why) {
  std::vector<ValueId> operands;
  for (size_t i = 5; i < r.inputs.size(); ++i) {
    const std::vector<ValueId> vs = r.inputs[i].arg.values();
    if (vs.empty() && r.inputs[i].arg.kind != Argument::Kind::None) {
      why = fmt::format("operand {} of {} is a literal", i - 5, r.name);
      return std::nullopt;
    }
    operands.insert(operands.end(), vs.begin(), vs.end());
  }
  const size_t body_inputs = body.input_values().size(), body_outputs = body.output_values().size(), outputs = r.output_values().size();
  if (operands.size() != body_inputs || body_outputs != outputs) {
    why = fmt::format("{} passes {} operands to a body of {} inputs and has {} outputs for its {}", r.name, operands.size(),
                      body_inputs, outputs, body_outputs);
    return std::nullopt;
  }
  return operands;
}

/// The body of one region copied into the top-level graph in the region node's place: its nodes renamed where a
/// top-level name is taken, its returned values named as the region's outputs, each node tagged with the region.
struct BodyInliner {
  const Graph& src;
  const Node& r;
  const Graph& body;
  std::string tag;                  ///< the region's autocast policy, as kAutocastMetadata holds it
  std::vector<ValueId> outputs;     ///< the region node's outputs
  std::unordered_map<ValueId, size_t> output_slot;  ///< body output -> its index among the region's outputs
  std::set<std::string> top;        ///< every name of the top-level graph: a body name that is one is renamed
  std::set<std::string> assigned;
  Map body_map;

  BodyInliner(const Graph& src, const Node& r, const Graph& body, std::string tag)
      : src(src), r(r), body(body), tag(std::move(tag)), outputs(r.output_values()) {
    for (const Value& v : src.values()) top.insert(v.name);
    for (const Node& n : src.nodes()) top.insert(n.name);
  }

  /// Each value the body returns once, and none of them its input; false (and `why`) otherwise.
  bool index_outputs(std::string& why) {
    const std::vector<ValueId> body_outputs = body.output_values();
    for (size_t k = 0; k < body_outputs.size(); ++k) {
      if (!output_slot.emplace(body_outputs[k], k).second) {
        why = fmt::format("the body of {} returns {} twice", r.name, body.value(body_outputs[k]).name);
        return false;
      }
      if (body.value(body_outputs[k]).producer == kGraphInput) {
        why = fmt::format("the body of {} returns its input {}", r.name, body.value(body_outputs[k]).name);
        return false;
      }
    }
    return true;
  }

  std::optional<std::string> body_name(const std::string& name) {
    std::string n = inlined_name(name, r.name, top.count(name) > 0);
    if ((n != name && top.count(n)) || !assigned.insert(n).second) return std::nullopt;
    return n;
  }

  /// The body's nodes added to `g`, fed `operands` (top-level values through `top_map`); the region's outputs enter
  /// `top_map`. False (and `why`) when a name cannot be given.
  bool add_to(Graph& g, Map& top_map, const std::vector<ValueId>& operands, std::string& why) {
    const std::vector<ValueId> body_inputs = body.input_values();
    for (size_t j = 0; j < body_inputs.size(); ++j) body_map[body_inputs[j]] = top_map.at(operands[j]);
    for (const Node& b : body.nodes()) {
      Node copy = b;
      std::optional<std::string> name = body_name(b.name);
      if (!name) {
        why = fmt::format("the body node {} of {} cannot be renamed: its name is taken", b.name, r.name);
        return false;
      }
      copy.name = *name;
      for (NamedArgument& in : copy.inputs) in.arg = remap(in.arg, body_map);
      for (ValueId v : b.output_values()) {
        if (body_map.count(v)) continue;  // a value named as its node was named above
        auto slot = output_slot.find(v);
        std::optional<std::string> value_name =
            slot != output_slot.end() ? std::optional<std::string>(src.value(outputs[slot->second]).name)
                                      : (body.value(v).name == b.name ? std::optional<std::string>(copy.name) : body_name(body.value(v).name));
        if (!value_name) {
          why = fmt::format("the body value {} of {} cannot be renamed: its name is taken", body.value(v).name, r.name);
          return false;
        }
        body_map[v] = copy_value(g, body.value(v), *value_name);
        if (slot != output_slot.end()) top_map[outputs[slot->second]] = body_map[v];
      }
      for (Argument& o : copy.outputs) o = remap(o, body_map);
      copy.metadata[kAutocastMetadata] = tag;
      copy.metadata[kInlinedFromMetadata] = r.name;
      copy.metadata[kBodyNameMetadata] = b.name;
      std::string body_values;
      for (ValueId v : b.output_values()) body_values += (body_values.empty() ? "" : ",") + body.value(v).name;
      copy.metadata[kBodyValuesMetadata] = body_values;
      g.add_node(std::move(copy));
    }
    return true;
  }
};

}  // namespace

std::optional<ExportedGraph> inline_autocast_region(const ExportedGraph& ir, NodeId region, std::string& why) {
  const Graph& src = ir.graph;
  if (region < 0 || static_cast<size_t>(region) >= src.nodes().size()) {
    why = "no such node";
    return std::nullopt;
  }
  const Node& r = src.node(region);
  std::optional<AutocastRegion> autocast = autocast_region(r, why);
  if (!autocast) return std::nullopt;
  const Graph& body = *r.inputs[4].arg.as<Subgraph>().graph;
  const std::optional<std::vector<ValueId>> operands = region_operands(r, body, why);
  if (!operands) return std::nullopt;
  BodyInliner inliner(src, r, body, fmt::format("{},{},{},{}", autocast->device_type, autocast->dtype, autocast->enabled ? 1 : 0,
                                                autocast->cache_enabled ? 1 : 0));
  if (!inliner.index_outputs(why)) return std::nullopt;

  ExportedGraph out = ir;  // specs (remapped below), constraints and versions as exported
  out.graph = Graph();
  Graph& g = out.graph;
  Map top_map;
  for (const Argument& a : src.inputs()) {
    for (ValueId v : a.values())
      if (!top_map.count(v)) top_map[v] = copy_value(g, src.value(v), src.value(v).name);
    g.add_input(remap(a, top_map));
  }
  for (const Node& n : src.nodes()) {
    if (n.id == region) {
      if (!inliner.add_to(g, top_map, *operands, why)) return std::nullopt;
      continue;
    }
    Node copy = n;
    for (NamedArgument& in : copy.inputs) in.arg = remap(in.arg, top_map);
    for (ValueId v : n.output_values()) top_map[v] = copy_value(g, src.value(v), src.value(v).name);
    for (Argument& o : copy.outputs) o = remap(o, top_map);
    g.add_node(std::move(copy));
  }
  for (const Argument& a : src.outputs()) g.add_output(remap(a, top_map));
  for (InputSpec& s : out.input_specs) s.arg = remap(s.arg, top_map);
  for (OutputSpec& s : out.output_specs) s.arg = remap(s.arg, top_map);
  try {
    g.finalize();
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
  return out;
}

std::vector<InlinedRegion> inlined_regions(const Graph& graph) {
  std::map<std::string, InlinedRegion> regions;
  for (const Node& n : graph.nodes()) {
    auto from = n.metadata.find(kInlinedFromMetadata), body = n.metadata.find(kBodyNameMetadata),
         values = n.metadata.find(kBodyValuesMetadata);
    if (from == n.metadata.end() || body == n.metadata.end() || values == n.metadata.end()) continue;
    InlinedRegion& r = regions[from->second];
    r.region = from->second;
    r.nodes.emplace_back(body->second, n.name);
    const std::vector<ValueId> outs = n.output_values();
    size_t k = 0, start = 0;
    while (start < values->second.size() && k < outs.size()) {
      const size_t comma = std::min(values->second.find(',', start), values->second.size());
      r.values.emplace_back(values->second.substr(start, comma - start), graph.value(outs[k++]).name);
      start = comma + 1;
    }
  }
  std::vector<InlinedRegion> out;
  for (auto& [name, r] : regions) out.push_back(std::move(r));
  return out;
}

}  // namespace pt2diff
