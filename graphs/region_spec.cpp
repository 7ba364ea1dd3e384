// graphs/region_spec.cpp — the regions backends compile (pt2diff/region.h): the whole graph, fused node sets
// and exploded ops.
#include <algorithm>
#include <fmt/format.h>
#include <unordered_set>

#include "graphs/dag.h"
#include "pt2diff/region.h"

namespace pt2diff {

namespace {
void add_once(std::vector<ValueId>& list, ValueId v) {
  if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
}
}  // namespace

RegionSpec RegionSpec::whole_graph(const ExportedGraph& ir) {
  RegionSpec r;
  const Graph& g = ir.graph;
  for (const Node& n : g.nodes()) r.nodes.push_back(n.id);
  r.inputs = g.input_values();
  for (ValueId v : g.output_values()) add_once(r.outputs, v);
  return r;
}

RegionSpec RegionSpec::fused(const Graph& graph, std::vector<NodeId> nodes, std::vector<ValueId> outputs) {
  RegionSpec r;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  // The values read from outside, in first-use order: O(region), so that probing small regions of
  // a large graph does not cost a pass over the graph.
  Region region{nodes};
  std::unordered_set<ValueId> seen;
  for (NodeId id : nodes)
    for (ValueId v : graph.node(id).input_values()) {
      const NodeId p = graph.value(v).producer;
      if ((p == kGraphInput || !region.contains(p)) && seen.insert(v).second) r.inputs.push_back(v);
    }
  r.nodes = std::move(nodes);
  r.outputs = std::move(outputs);
  return r;
}

RegionSpec RegionSpec::exploded_ops(const Graph& graph, std::vector<NodeId> nodes) {
  RegionSpec r;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (NodeId id : nodes) {
    const Node& n = graph.node(id);
    for (ValueId v : n.input_values())
      if (graph.value(v).kind != ValueKind::CustomObj) add_once(r.inputs, v);
    for (ValueId v : n.output_values()) r.outputs.push_back(v);
  }
  r.nodes = std::move(nodes);
  r.exploded = true;
  return r;
}

std::string RegionSpec::describe(const Graph& graph) const {
  if (nodes.empty()) return "no nodes";
  const std::string first = graph.node(nodes.front()).name, last = graph.node(nodes.back()).name;
  return fmt::format("{} node{}{}, {}{}", nodes.size(), nodes.size() == 1 ? "" : "s", exploded ? " exploded" : "", first,
                     nodes.size() == 1 ? "" : " .. " + last);
}

}  // namespace pt2diff
