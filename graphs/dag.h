// graphs/dag.h — the graph as a DAG of nodes (Boost.Graph): order, cones, last uses, frontiers.
//
// Vertices are NodeIds; an edge p → u means node u reads a value that node p defines. Graph inputs
// are not vertices: they are available before any node runs. Node ids are already a topological
// order (Graph::finalize() rejects anything else), so every list of nodes returned here is sorted
// by id, which is the order of the user's program.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// A set of nodes, kept sorted by id (topological order).
struct Region {
  std::vector<NodeId> nodes;
  bool contains(NodeId n) const;
  bool empty() const { return nodes.empty(); }
  size_t size() const { return nodes.size(); }
};

/// The boundary of a region: what flows in and what flows out.
struct Frontier {
  std::vector<ValueId> inputs;   ///< values read inside the region and defined outside it (or graph inputs)
  std::vector<ValueId> outputs;  ///< values defined inside the region and used outside it or by the graph's outputs
};

class Dag {
 public:
  explicit Dag(const Graph& graph);
  ~Dag();
  Dag(const Dag&) = delete;
  Dag& operator=(const Dag&) = delete;

  const Graph& graph() const { return graph_; }

  /// A topological order computed by Boost's DFS; throws pt2diff::Error on a cycle.
  std::vector<NodeId> topological_order() const;
  /// Nodes that define a value `node` reads, sorted.
  std::vector<NodeId> producers(NodeId node) const;
  /// Nodes that read a value `node` defines, sorted.
  std::vector<NodeId> users(NodeId node) const;
  /// Every node needed to compute `values` (their producers and all their ancestors), sorted.
  Region ancestor_cone(const std::vector<ValueId>& values) const;
  /// Every node that depends on `node` (not including it), sorted.
  Region descendants(NodeId node) const;

  /// Values defined in `region` and read outside it (by other nodes or as graph outputs), and values
  /// read in `region` but defined outside it.
  Frontier frontier(const Region& region) const;
  /// True when every producer of every node in `region` is in `region` (its inputs are graph inputs).
  bool is_ancestor_closed(const Region& region) const;

 private:
  const Graph& graph_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// When each value can be freed during a run in `order` (a topological order of all nodes).
struct LastUse {
  static constexpr int32_t kKeep = std::numeric_limits<int32_t>::max();  ///< graph outputs: never freed
  static constexpr int32_t kUnused = -1;  ///< never read: free right after it is defined
  /// Per ValueId: position in `order` of its last reader, kKeep or kUnused.
  std::vector<int32_t> position;
  /// Per position in `order`: values that die once that node has run (read for the last time there,
  /// or defined there and never read). Graph inputs that nobody reads are not listed.
  std::vector<std::vector<ValueId>> dies_after;
};
LastUse last_uses(const Graph& graph, const std::vector<NodeId>& order);

}  // namespace pt2diff
