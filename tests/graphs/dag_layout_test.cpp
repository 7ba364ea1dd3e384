// tests/graphs/dag_layout_test.cpp — the culprit's neighbourhood and its layered layout
// (graphs/dag_layout.h) on hand-made graphs: which nodes are drawn, layers, dummies, rows that
// do not overlap, and the same drawing every time.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "graphs/dag_layout.h"
#include "graph_builder.h"

namespace pt2diff {
namespace {

using testing::Builder;

/// x → relu → neg → exp → abs → sin: a chain of five nodes.
Graph chain() {
  Builder b({"x"});
  b.node("relu", "relu.default", {b.t("x")}, {b.t("a")});
  b.node("neg", "neg.default", {b.t("a")}, {b.t("b")});
  b.node("exp", "exp.default", {b.t("b")}, {b.t("c")});
  b.node("abs", "abs.default", {b.t("c")}, {b.t("d")});
  b.node("sin", "sin.default", {b.t("d")}, {b.t("e")});
  return b.finish({"e"});
}

NodeId by_name(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return n.id;
  ADD_FAILURE() << "no node " << name;
  return 0;
}

const DagItem& item_of(const DagLayout& d, NodeId n) {
  for (const DagItem& it : d.items)
    if (!it.is_input && !it.dummy && it.id == n) return it;
  throw std::runtime_error("node not drawn");
}

/// No two items of a row overlap, and every item lies inside the drawing.
void expect_rows_apart(const DagLayout& d) {
  for (size_t i = 0; i < d.items.size(); ++i) {
    const DagItem& a = d.items[i];
    const double wa = a.dummy ? kDummyW : kBoxW;
    EXPECT_GE(a.x, 0);
    EXPECT_LE(a.x + wa, d.width);
    EXPECT_LE(a.y + kBoxH, d.height);
    for (size_t j = i + 1; j < d.items.size(); ++j) {
      const DagItem& b = d.items[j];
      if (a.layer != b.layer) continue;
      const double wb = b.dummy ? kDummyW : kBoxW;
      EXPECT_TRUE(a.x + wa + kGapX <= b.x + 1e-9 || b.x + wb + kGapX <= a.x + 1e-9) << "items " << i << " and " << j << " overlap";
    }
  }
}

TEST(DagLayout, TwoHopsAroundTheCulpritOneLayerEach) {
  const Graph g = chain();
  const Neighbourhood nb = neighbourhood(g, {by_name(g, "exp")});
  EXPECT_EQ(nb.hops, 2);
  ASSERT_EQ(nb.nodes.size(), 5u);
  EXPECT_EQ(nb.nodes.at(by_name(g, "relu")), -2);
  EXPECT_EQ(nb.nodes.at(by_name(g, "neg")), -1);
  EXPECT_EQ(nb.nodes.at(by_name(g, "exp")), 0);
  EXPECT_EQ(nb.nodes.at(by_name(g, "sin")), 2);
  EXPECT_TRUE(nb.inputs.empty()) << "x is three hops up";

  const DagLayout d = dag_layout(g, nb);
  EXPECT_EQ(d.layers, 5);
  EXPECT_EQ(d.items.size(), 5u);
  EXPECT_EQ(d.edges.size(), 4u);
  const char* order[] = {"relu", "neg", "exp", "abs", "sin"};
  for (int k = 0; k < 5; ++k) {
    const DagItem& it = item_of(d, by_name(g, order[k]));
    EXPECT_EQ(it.layer, k) << order[k];
    EXPECT_DOUBLE_EQ(it.y, kPad + k * (kBoxH + kGapY)) << order[k];
    EXPECT_DOUBLE_EQ(it.x, (d.width - kBoxW) / 2) << "a chain is one centred column";
  }
  EXPECT_DOUBLE_EQ(d.width, 480.0);
  EXPECT_DOUBLE_EQ(d.height, 5 * (kBoxH + kGapY) - kGapY + 2 * kPad);
}

TEST(DagLayout, AnEdgeOverSeveralLayersBendsThroughADummyAndTheInputSitsAboveItsConsumer) {
  // x → a = relu(x); b = neg(a); c = add(a, b): a → c crosses b's layer.
  Builder b({"x"});
  b.node("relu", "relu.default", {b.t("x")}, {b.t("a")});
  b.node("neg", "neg.default", {b.t("a")}, {b.t("b")});
  b.node("add", "add.Tensor", {b.t("a"), b.t("b")}, {b.t("c")});
  const Graph g = b.finish({"c"});
  const Neighbourhood nb = neighbourhood(g, {by_name(g, "neg")});
  ASSERT_EQ(nb.inputs.size(), 1u) << "x feeds relu, one hop above neg";
  const DagLayout d = dag_layout(g, nb);
  EXPECT_EQ(d.layers, 4);  // x, relu, neg, add
  size_t dummies = 0;
  for (const DagItem& it : d.items) dummies += it.dummy;
  EXPECT_EQ(dummies, 1u);
  const DagItem& relu = item_of(d, by_name(g, "relu"));
  const DagItem& add = item_of(d, by_name(g, "add"));
  bool bent = false;
  for (const DagEdge& e : d.edges)
    if (!d.items[e.from].is_input && d.items[e.from].id == relu.id && d.items[e.to].id == add.id) {
      ASSERT_EQ(e.via.size(), 1u);
      EXPECT_EQ(d.items[e.via[0]].layer, item_of(d, by_name(g, "neg")).layer);
      bent = true;
    }
  EXPECT_TRUE(bent) << "the edge relu → add";
  for (const DagItem& it : d.items) {
    if (it.is_input) {
      EXPECT_EQ(it.layer, relu.layer - 1);
    }
  }
  expect_rows_apart(d);
}

TEST(DagLayout, ACrowdedNeighbourhoodIsDrawnOneHopDeep) {
  // 30 producers, each relu(x_i), feed one cat: two hops would draw 30 inputs as well (61 items).
  std::vector<std::string> inputs, relus;
  for (int i = 0; i < 30; ++i) inputs.push_back("x" + std::to_string(i));
  Builder b(inputs);
  for (int i = 0; i < 30; ++i) {
    b.node("relu" + std::to_string(i), "relu.default", {b.t(inputs[static_cast<size_t>(i)])}, {b.t("r" + std::to_string(i))});
    relus.push_back("r" + std::to_string(i));
  }
  b.node("cat", "cat.default", {b.list(relus)}, {b.t("y")});
  const Graph g = b.finish({"y"});
  const Neighbourhood nb = neighbourhood(g, {by_name(g, "cat")});
  EXPECT_EQ(nb.hops, 1);
  EXPECT_EQ(nb.nodes.size(), 31u);
  EXPECT_TRUE(nb.inputs.empty());
  EXPECT_EQ(collect_neighbourhood(g, {by_name(g, "cat")}, 2).inputs.size(), 30u);
  const DagLayout d = dag_layout(g, nb);
  EXPECT_EQ(d.layers, 2);
  expect_rows_apart(d);
  EXPECT_DOUBLE_EQ(d.width, 30 * kBoxW + 29 * kGapX + 2 * kPad) << "the widest row sets the width";
}

TEST(DagLayout, TheSameGraphAlwaysGivesTheSameDrawing) {
  Builder b({"x", "w"});
  b.node("relu", "relu.default", {b.t("x")}, {b.t("a")});
  b.node("mul", "mul.Tensor", {b.t("a"), b.t("w")}, {b.t("m")});
  b.node("add", "add.Tensor", {b.t("m"), b.t("a")}, {b.t("s")});
  b.node("neg", "neg.default", {b.t("w")}, {b.t("n")});
  b.node("sub", "sub.Tensor", {b.t("s"), b.t("n")}, {b.t("y")});
  const Graph g = b.finish({"y"});
  const DagLayout first = dag_layout(g, neighbourhood(g, {by_name(g, "add")}));
  const DagLayout again = dag_layout(g, neighbourhood(g, {by_name(g, "add")}));
  ASSERT_EQ(first.items.size(), again.items.size());
  for (size_t i = 0; i < first.items.size(); ++i) {
    EXPECT_EQ(first.items[i].x, again.items[i].x);
    EXPECT_EQ(first.items[i].y, again.items[i].y);
  }
  expect_rows_apart(first);
}

}  // namespace
}  // namespace pt2diff
