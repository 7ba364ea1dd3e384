// graphs/dag_layout.h — a culprit's neighbourhood in the graph, laid out in layers for drawing.
//
// The HTML report draws the nodes around a culprit (engine/report/html_report.cpp draws; this lays out):
//
//   Neighbourhood nb = neighbourhood(graph, culprit_ids);   // producers and consumers, 2 hops (1 if crowded)
//   DagLayout d = dag_layout(graph, nb);                    // layers, dummies, barycentre order, positions
//   for (const DagItem& it : d.items) ... it.x, it.y         // boxes kBoxW x kBoxH; a dummy is an edge's bend
//
// The layout is Sugiyama's: a layer per longest path from the top, a dummy item in every layer a long
// edge crosses (so edges run between boxes), three barycentre sweeps to uncross edges, rows centred.
// It is deterministic (items in id order, stable sorts): the same graph always gives the same drawing.
// Written here rather than taken from Graphviz: docs/architecture.md says why. Needs the IR only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// Sizes of the drawing: a node's box, the gaps between boxes and layers, the margin, a dummy's width.
inline constexpr double kBoxW = 200, kBoxH = 56, kGapX = 22, kGapY = 46, kPad = 16, kDummyW = 12;

struct DagItem {
  bool is_input = false;  // a graph input value (placeholder), not a node
  bool dummy = false;     // a bend of an edge that spans several layers (keeps boxes out of its way)
  int32_t id = 0;         // NodeId, or ValueId for inputs
  int hop = 0;            // distance from the culprit
  int layer = 0;
  double order = 0;       // position within the layer
  double x = 0, y = 0;
};

/// A value flowing between two drawn items.
struct DagEdge {
  size_t from, to;
  ValueId value;
  std::vector<size_t> via = {};  // dummy items, one per layer crossed
};

/// The culprit's producers and consumers (hop < 0 and > 0; the culprit 0) and the graph inputs among its producers.
struct Neighbourhood {
  std::map<NodeId, int> nodes;
  std::map<ValueId, int> inputs;
  int hops = 0;
};

/// The drawing: every item with its layer and position, and the edges between them.
struct DagLayout {
  std::vector<DagItem> items;
  std::vector<DagEdge> edges;
  int layers = 0;
  double width = 0, height = 0;
};

/// Producers and consumers up to `hops` away from the `culprit` nodes (graph inputs count as producers).
Neighbourhood collect_neighbourhood(const Graph& g, const std::set<NodeId>& culprit, int hops);

/// Two hops around the culprit, or one where two would draw more than 40 items.
Neighbourhood neighbourhood(const Graph& g, const std::set<NodeId>& culprit);

/// The neighbourhood laid out: items (graph inputs first, then nodes by id, then dummies) with their layer,
/// order and position; the edges between them; the drawing's size (at least 480 wide).
DagLayout dag_layout(const Graph& g, const Neighbourhood& nb);

}  // namespace pt2diff
