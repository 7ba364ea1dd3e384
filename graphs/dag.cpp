// graphs/dag.cpp — Boost.Graph view of the IR: topological sort, cones, frontiers, last uses.
#include "graphs/dag.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/graph/topological_sort.hpp>
#include <fmt/format.h>
#include <iterator>

#include "pt2diff/error.h"

namespace pt2diff {

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;

struct Dag::Impl {
  BoostGraph g;
};

bool Region::contains(NodeId n) const { return std::binary_search(nodes.begin(), nodes.end(), n); }

Dag::Dag(const Graph& graph) : graph_(graph), impl_(std::make_unique<Impl>()) {
  impl_->g = BoostGraph(graph.nodes().size());
  for (const Node& n : graph.nodes()) {
    std::vector<NodeId> seen;
    for (ValueId v : n.input_values()) {
      NodeId p = graph.value(v).producer;
      if (p == kGraphInput || std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      boost::add_edge(static_cast<size_t>(p), static_cast<size_t>(n.id), impl_->g);
    }
  }
}

Dag::~Dag() = default;

std::vector<NodeId> Dag::topological_order() const {
  std::vector<size_t> reversed;
  try {
    boost::topological_sort(impl_->g, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw Error(Error::Kind::BadArchive, "the graph has a cycle");
  }
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<NodeId> Dag::producers(NodeId node) const {
  std::vector<NodeId> out;
  for (auto [it, end] = boost::in_edges(static_cast<size_t>(node), impl_->g); it != end; ++it)
    out.push_back(static_cast<NodeId>(boost::source(*it, impl_->g)));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<NodeId> Dag::users(NodeId node) const {
  std::vector<NodeId> out;
  for (auto [it, end] = boost::out_edges(static_cast<size_t>(node), impl_->g); it != end; ++it)
    out.push_back(static_cast<NodeId>(boost::target(*it, impl_->g)));
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
/// Marks every vertex reached from `starts` by BFS over `g` (forward or reversed).
template <class G>
std::vector<char> reach(const G& g, size_t n, const std::vector<size_t>& starts) {
  std::vector<char> seen(n, 0);
  std::vector<boost::default_color_type> colors(n, boost::white_color);
  auto color_map = boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, g));
  struct Marker : boost::default_bfs_visitor {
    std::vector<char>* seen;
    void discover_vertex(typename boost::graph_traits<G>::vertex_descriptor v, const G&) const { (*seen)[v] = 1; }
  } marker;
  marker.seen = &seen;
  for (size_t s : starts)
    if (colors[s] == boost::white_color) boost::breadth_first_visit(g, s, boost::visitor(marker).color_map(color_map));
  return seen;
}

Region marked_nodes(const std::vector<char>& marks) {
  Region r;
  for (size_t i = 0; i < marks.size(); ++i)
    if (marks[i]) r.nodes.push_back(static_cast<NodeId>(i));
  return r;
}
}  // namespace

Region Dag::ancestor_cone(const std::vector<ValueId>& values) const {
  std::vector<size_t> starts;
  for (ValueId v : values) {
    NodeId p = graph_.value(v).producer;
    if (p != kGraphInput) starts.push_back(static_cast<size_t>(p));
  }
  auto reversed = boost::make_reverse_graph(impl_->g);
  return marked_nodes(reach(reversed, graph_.nodes().size(), starts));
}

Region Dag::descendants(NodeId node) const {
  std::vector<size_t> starts;
  for (NodeId u : users(node)) starts.push_back(static_cast<size_t>(u));
  return marked_nodes(reach(impl_->g, graph_.nodes().size(), starts));
}

Frontier Dag::frontier(const Region& region) const {
  Frontier f;
  for (NodeId n : region.nodes) {
    const Node& node = graph_.node(n);
    for (ValueId v : node.input_values()) {
      NodeId p = graph_.value(v).producer;
      if ((p == kGraphInput || !region.contains(p)) && std::find(f.inputs.begin(), f.inputs.end(), v) == f.inputs.end())
        f.inputs.push_back(v);
    }
    for (ValueId v : node.output_values()) {
      const Value& value = graph_.value(v);
      bool used_outside = value.is_graph_output ||
                          std::any_of(value.users.begin(), value.users.end(), [&](NodeId u) { return !region.contains(u); });
      if (used_outside) f.outputs.push_back(v);
    }
  }
  return f;
}

bool Dag::is_ancestor_closed(const Region& region) const {
  for (NodeId n : region.nodes)
    for (NodeId p : producers(n))
      if (!region.contains(p)) return false;
  return true;
}

LastUse last_uses(const Graph& graph, const std::vector<NodeId>& order) {
  LastUse lu;
  lu.position.assign(graph.values().size(), LastUse::kUnused);
  lu.dies_after.assign(order.size(), {});
  std::vector<int32_t> defined_at(graph.values().size(), -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Node& n = graph.node(order[pos]);
    for (ValueId v : n.input_values()) lu.position[static_cast<size_t>(v)] = static_cast<int32_t>(pos);
    for (ValueId v : n.output_values()) defined_at[static_cast<size_t>(v)] = static_cast<int32_t>(pos);
  }
  for (ValueId v : graph.output_values()) lu.position[static_cast<size_t>(v)] = LastUse::kKeep;
  for (size_t v = 0; v < lu.position.size(); ++v) {
    int32_t p = lu.position[v];
    if (p == LastUse::kKeep) continue;
    if (p == LastUse::kUnused) {
      if (defined_at[v] >= 0) lu.dies_after[static_cast<size_t>(defined_at[v])].push_back(static_cast<ValueId>(v));
      continue;
    }
    lu.dies_after[static_cast<size_t>(p)].push_back(static_cast<ValueId>(v));
  }
  return lu;
}

}  // namespace pt2diff
