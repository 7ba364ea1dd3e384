// graphs/storage_model.cpp — the storage model of a graph that writes in place (storage_model.h).
#include "pt2diff/storage_model.h"

#include <algorithm>

namespace pt2diff {

namespace {

void add_edge_once(std::vector<NodeId>& to, NodeId id) {
  if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
}

}  // namespace

bool StorageModel::any() const {
  return std::any_of(writes.begin(), writes.end(), [](const auto& w) { return !w.empty(); });
}

std::optional<NodeId> StorageModel::last_write_before(ValueId r, NodeId node) const {
  const std::vector<NodeId>& ws = writers[static_cast<size_t>(r)];
  auto it = std::lower_bound(ws.begin(), ws.end(), node);
  if (it == ws.begin()) return std::nullopt;
  return *std::prev(it);
}

std::optional<NodeId> StorageModel::first_write_after(ValueId r, NodeId node) const {
  const std::vector<NodeId>& ws = writers[static_cast<size_t>(r)];
  auto it = std::upper_bound(ws.begin(), ws.end(), node);
  if (it == ws.end()) return std::nullopt;
  return *it;
}

std::optional<NodeId> StorageModel::write_seen(const Graph& graph, ValueId v, NodeId reader) const {
  const std::optional<NodeId> w = last_write_before(root[static_cast<size_t>(v)], reader);
  const NodeId made = graph.value(v).producer;
  // A value made by the write itself (an in-place op's return) or after it is kept as the write left it.
  if (!w || (made != kGraphInput && *w <= made)) return std::nullopt;
  return w;
}

std::vector<ValueId> written_region_inputs(const StorageModel& m, const RegionSpec& region) {
  std::vector<ValueId> out;
  if (m.writes.empty()) return out;
  for (ValueId v : region.inputs)
    for (NodeId id : region.nodes) {
      const auto& w = m.writes[static_cast<size_t>(id)];
      if (std::find(w.begin(), w.end(), m.root[static_cast<size_t>(v)]) != w.end()) {
        out.push_back(v);
        break;
      }
    }
  return out;
}

std::vector<ValueId> read_before_written(const Graph& graph, const StorageModel& m, std::vector<NodeId> nodes) {
  std::vector<ValueId> out;
  if (m.writes.empty()) return out;
  std::sort(nodes.begin(), nodes.end());
  auto in = [&](NodeId id) { return std::binary_search(nodes.begin(), nodes.end(), id); };
  for (NodeId id : nodes) {
    bool read_before_write = false;
    for (ValueId v : graph.node(id).input_values())
      if (auto w = m.first_write_after(m.root[static_cast<size_t>(v)], id); w && in(*w)) read_before_write = true;
    if (!read_before_write) continue;
    for (ValueId v : graph.node(id).output_values()) {
      const Value& value = graph.value(v);
      bool passed_on = value.is_graph_output;
      for (NodeId u : value.users) passed_on = passed_on || !in(u);
      if (passed_on) out.push_back(v);
    }
  }
  return out;
}

StorageModel build_storage_model(const Graph& graph, const std::vector<NodeEffects>& effects) {
  StorageModel m;
  const size_t values = graph.values().size(), nodes = graph.nodes().size();
  m.root.resize(values);
  for (size_t v = 0; v < values; ++v) m.root[v] = static_cast<ValueId>(v);
  m.writes.resize(nodes);
  m.after.resize(nodes);
  m.writers.resize(values);
  for (const Node& n : graph.nodes()) {
    const NodeEffects& e = effects.at(static_cast<size_t>(n.id));
    const std::vector<ValueId> outs = n.output_values();
    for (size_t i = 0; i < outs.size() && i < e.aliases.size(); ++i)
      if (e.aliases[i] != kNoValue) m.root[static_cast<size_t>(outs[i])] = m.root[static_cast<size_t>(e.aliases[i])];
    for (ValueId v : e.written) {
      const ValueId r = m.root[static_cast<size_t>(v)];
      if (std::find(m.writes[static_cast<size_t>(n.id)].begin(), m.writes[static_cast<size_t>(n.id)].end(), r) ==
          m.writes[static_cast<size_t>(n.id)].end()) {
        m.writes[static_cast<size_t>(n.id)].push_back(r);
        m.writers[static_cast<size_t>(r)].push_back(n.id);
      }
    }
  }
  // Effect edges, in one pass in graph order: per root, its last writer and the readers since.
  std::vector<std::optional<NodeId>> last_writer(values);
  std::vector<std::vector<NodeId>> readers_since(values);
  for (const Node& n : graph.nodes()) {
    const NodeEffects& e = effects.at(static_cast<size_t>(n.id));
    const std::vector<ValueId>& written = m.writes[static_cast<size_t>(n.id)];
    const bool is_view = written.empty() && !e.aliases.empty() &&
                         std::all_of(e.aliases.begin(), e.aliases.end(), [](ValueId a) { return a != kNoValue; });
    for (ValueId v : n.input_values()) {
      const auto r = static_cast<size_t>(m.root[static_cast<size_t>(v)]);
      if (m.writers[r].empty()) continue;
      if (last_writer[r] && *last_writer[r] != n.id) add_edge_once(m.after[static_cast<size_t>(n.id)], *last_writer[r]);
      if (!is_view) add_edge_once(readers_since[r], n.id);  // a view reads no data: where it stands is not an order
    }
    for (ValueId r : written) {
      const auto i = static_cast<size_t>(r);
      for (NodeId reader : readers_since[i])
        if (reader != n.id) add_edge_once(m.after[static_cast<size_t>(n.id)], reader);
      readers_since[i].clear();
      last_writer[i] = n.id;
    }
  }
  for (const Value& v : graph.values())
    if (v.producer == kGraphInput && m.root[static_cast<size_t>(v.id)] == v.id && !m.writers[static_cast<size_t>(v.id)].empty())
      m.mutated_inputs.push_back(v.id);
  return m;
}

}  // namespace pt2diff
