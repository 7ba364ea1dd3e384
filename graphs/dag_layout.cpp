// graphs/dag_layout.cpp — Sugiyama-style layout of a culprit's neighbourhood (dag_layout.h).
#include "graphs/dag_layout.h"

#include <algorithm>
#include <utility>

namespace pt2diff {

namespace {

/// Pieces of edges between consecutive layers (through the dummies): what the ordering looks at.
using DagSegments = std::vector<std::pair<size_t, size_t>>;

/// Producers up to `nb.hops` away; graph inputs (tensors) count as a hop on the producer side.
void add_producers(const Graph& g, const std::set<NodeId>& culprit, Neighbourhood& nb) {
  std::vector<NodeId> frontier(culprit.begin(), culprit.end());
  for (int hop = 1; hop <= nb.hops; ++hop) {
    std::vector<NodeId> next;
    for (NodeId n : frontier)
      for (ValueId v : g.node(n).input_values()) {
        const NodeId p = g.value(v).producer;
        if (p == kGraphInput) {
          if (g.value(v).kind == ValueKind::Tensor && !nb.inputs.count(v)) nb.inputs[v] = hop;
        } else if (!nb.nodes.count(p)) {
          nb.nodes[p] = -hop;
          next.push_back(p);
        }
      }
    frontier = next;
  }
}

/// Consumers up to `nb.hops` away (nodes already drawn as producers stay producers).
void add_consumers(const Graph& g, const std::set<NodeId>& culprit, Neighbourhood& nb) {
  std::vector<NodeId> frontier(culprit.begin(), culprit.end());
  for (int hop = 1; hop <= nb.hops; ++hop) {
    std::vector<NodeId> next;
    for (NodeId n : frontier)
      for (ValueId v : g.node(n).output_values())
        for (NodeId u : g.value(v).users)
          if (!nb.nodes.count(u)) nb.nodes[u] = hop, next.push_back(u);
    frontier = next;
  }
}

/// Items in topological order (graph inputs, then nodes by id) and the edges: every value flowing between two of them.
DagLayout dag_items(const Graph& g, const Neighbourhood& nb) {
  DagLayout d;
  std::map<ValueId, size_t> input_item;
  std::map<NodeId, size_t> node_item;
  for (const auto& [v, hop] : nb.inputs) input_item[v] = d.items.size(), d.items.push_back({.is_input = true, .id = v, .hop = hop});
  for (const auto& [n, hop] : nb.nodes) node_item[n] = d.items.size(), d.items.push_back({.is_input = false, .id = n, .hop = hop});
  for (const auto& [n, index] : node_item)
    for (ValueId v : g.node(n).input_values()) {
      const NodeId p = g.value(v).producer;
      if (p == kGraphInput) {
        if (auto it = input_item.find(v); it != input_item.end()) d.edges.push_back({it->second, index, v});
      } else if (auto it = node_item.find(p); it != node_item.end()) {
        d.edges.push_back({it->second, index, v});
      }
    }
  return d;
}

/// Layers: longest path from the top among drawn nodes; a graph input sits just above its first consumer.

/// Returns how many layers there are.
int assign_layers(std::vector<DagItem>& items, const std::vector<DagEdge>& edges) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].is_input) continue;
    int layer = 0;
    for (const DagEdge& e : edges)
      if (e.to == i && !items[e.from].is_input) layer = std::max(layer, items[e.from].layer + 1);
    items[i].layer = layer;
  }
  bool shift = false;
  for (size_t i = 0; i < items.size(); ++i) {  // the inputs come first, in the order of their ids
    if (!items[i].is_input) continue;
    int layer = 1 << 20;
    for (const DagEdge& e : edges)
      if (e.from == i) layer = std::min(layer, items[e.to].layer - 1);
    items[i].layer = layer;
    shift = shift || layer < 0;
  }
  if (shift)
    for (DagItem& it : items) ++it.layer;
  int layers = 0;
  for (const DagItem& it : items) layers = std::max(layers, it.layer + 1);
  return layers;
}

/// An edge spanning several layers gets a dummy item in each layer it crosses (Sugiyama): the ordering

/// places it like a node, so the edge runs between boxes instead of through them. Returns the segments.
DagSegments add_dummies(std::vector<DagItem>& items, std::vector<DagEdge>& edges) {
  DagSegments segments;  // consecutive layers only
  for (DagEdge& e : edges) {
    size_t prev = e.from;
    for (int layer = items[e.from].layer + 1; layer < items[e.to].layer; ++layer) {
      DagItem d;
      d.dummy = true;
      d.layer = layer;
      e.via.push_back(items.size());
      items.push_back(d);
      segments.emplace_back(prev, items.size() - 1);
      prev = items.size() - 1;
    }
    segments.emplace_back(prev, e.to);
  }
  return segments;
}

/// Each item's order: its index in its row.
void number_rows(std::vector<DagItem>& items, const std::vector<std::vector<size_t>>& by_layer) {
  for (const auto& row : by_layer)
    for (size_t k = 0; k < row.size(); ++k) items[row[k]].order = static_cast<double>(k);
}

/// One sweep of barycentres, down or up: each row sorted by the mean order of its neighbours in the row before.
void barycentre_sweep(std::vector<DagItem>& items, std::vector<std::vector<size_t>>& by_layer, const DagSegments& segments, bool down) {
  const int layers = static_cast<int>(by_layer.size());
  for (int li = down ? 1 : layers - 2; down ? li < layers : li >= 0; li += down ? 1 : -1) {
    auto& row = by_layer[static_cast<size_t>(li)];
    std::map<size_t, double> bary;
    for (size_t i : row) {
      double sum = 0;
      int count = 0;
      for (const auto& [from, to] : segments) {
        const size_t other = down ? from : to, self = down ? to : from;
        if (self == i) sum += items[other].order, ++count;
      }
      bary[i] = count ? sum / count : items[i].order;
    }
    std::stable_sort(row.begin(), row.end(), [&](size_t a, size_t b) { return bary[a] < bary[b]; });
    for (size_t k = 0; k < row.size(); ++k) items[row[k]].order = static_cast<double>(k);
  }
}

/// The items of each layer, in the order that uncrosses edges: two sweeps of barycentres (down, then up, then down again).
std::vector<std::vector<size_t>> order_layers(std::vector<DagItem>& items, int layers, const DagSegments& segments) {
  std::vector<std::vector<size_t>> by_layer(static_cast<size_t>(layers));
  for (size_t i = 0; i < items.size(); ++i) by_layer[static_cast<size_t>(items[i].layer)].push_back(i);
  number_rows(items, by_layer);
  barycentre_sweep(items, by_layer, segments, true);
  barycentre_sweep(items, by_layer, segments, false);
  barycentre_sweep(items, by_layer, segments, true);
  return by_layer;
}

double item_width(const DagItem& it) { return it.dummy ? kDummyW : kBoxW; }

/// The width of a row: its items and the gaps between them.
double row_width(const std::vector<DagItem>& items, const std::vector<size_t>& row) {
  double w = 0;
  for (size_t i : row) w += item_width(items[i]);
  return w + kGapX * static_cast<double>(row.empty() ? 0 : row.size() - 1);
}

/// Positions: each row centred, layers top to bottom; the drawing's size from the widest row.
void place_items(DagLayout& d, const std::vector<std::vector<size_t>>& by_layer) {
  double widest = 0;
  for (const auto& row : by_layer) widest = std::max(widest, row_width(d.items, row));
  d.width = std::max(480.0, widest + 2 * kPad);
  d.height = static_cast<double>(d.layers) * (kBoxH + kGapY) - kGapY + 2 * kPad;
  for (const auto& row : by_layer) {
    double x = (d.width - row_width(d.items, row)) / 2;
    for (size_t i : row) {
      d.items[i].x = x;
      d.items[i].y = kPad + d.items[i].layer * (kBoxH + kGapY);
      x += item_width(d.items[i]) + kGapX;
    }
  }
}

}  // namespace

/// Producers and consumers up to `hops` away from the culprit.
Neighbourhood collect_neighbourhood(const Graph& g, const std::set<NodeId>& culprit, int hops) {
  Neighbourhood nb;
  nb.hops = hops;
  for (NodeId c : culprit) nb.nodes[c] = 0;
  add_producers(g, culprit, nb);
  add_consumers(g, culprit, nb);
  return nb;
}

/// Two hops around the culprit, or one where two would draw too many items.
Neighbourhood neighbourhood(const Graph& g, const std::set<NodeId>& culprit) {
  constexpr size_t kMaxItems = 40;
  Neighbourhood nb = collect_neighbourhood(g, culprit, 2);
  if (nb.nodes.size() + nb.inputs.size() > kMaxItems) nb = collect_neighbourhood(g, culprit, 1);
  return nb;
}

/// The neighbourhood laid out in layers (Sugiyama style: layers, dummies, barycentre ordering, placement).
DagLayout dag_layout(const Graph& g, const Neighbourhood& nb) {
  DagLayout d = dag_items(g, nb);
  d.layers = assign_layers(d.items, d.edges);
  const DagSegments segments = add_dummies(d.items, d.edges);
  place_items(d, order_layers(d.items, d.layers, segments));
  return d;
}

}  // namespace pt2diff
