// tests/graphs/dag_test.cpp — the DAG view on hand-made graphs with branches, multi-output and
// list-output ops, a subgraph (cond) and a dead node.
#include <gtest/gtest.h>

#include <algorithm>

#include "graphs/dag.h"
#include "graph_builder.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

using testing::Builder;

std::shared_ptr<const Graph> branch_body() {
  Builder b({"f_in"});
  b.node("cos", "cos.default", {b.t("f_in")}, {b.t("cos_out")});
  return std::make_shared<Graph>(b.finish({"cos_out"}));
}

/// x, w → a=relu(x); (b, c)=max.dim(a); d=mul(a, w); [e, f]=split(d); g=add(b, e);
///        h=cond(c, {true_graph}, f); dead=neg(x); outputs g, h.
Graph sample() {
  Builder b({"x", "w"});
  b.node("relu", "relu.default", {b.t("x")}, {b.t("a")});
  b.node("max", "max.dim", {b.t("a")}, {b.t("b"), b.t("c")});
  b.node("mul", "mul.Tensor", {b.t("a"), b.t("w")}, {b.t("d")});
  b.node("split", "split.Tensor", {b.t("d")}, {b.list({"e", "f"})});
  b.node("add", "add.Tensor", {b.t("b"), b.t("e")}, {b.t("g")});
  Node cond;
  cond.name = "cond";
  cond.target = "torch.ops.higher_order.cond";
  cond.inputs = {{"", b.t("c"), false},
                 {"", Argument{Argument::Kind::Graph, Subgraph{"true_graph_0", branch_body()}}, false},
                 {"", b.list({"f"}), false}};
  cond.outputs = {b.t("h")};
  b.node_with(std::move(cond));
  b.node("neg", "neg.default", {b.t("x")}, {b.t("dead")});
  return b.finish({"g", "h"});
}

std::vector<NodeId> ids(std::initializer_list<NodeId> l) { return l; }
std::vector<std::string> names(const Graph& g, const std::vector<ValueId>& vs) {
  std::vector<std::string> out;
  for (ValueId v : vs) out.push_back(g.value(v).name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Dag, TopologicalOrderPutsEveryNodeAfterItsProducers) {
  Graph g = sample();
  Dag dag(g);
  auto order = dag.topological_order();
  ASSERT_EQ(order.size(), g.nodes().size());
  std::vector<size_t> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = i;
  for (const Node& n : g.nodes())
    for (NodeId p : dag.producers(n.id)) EXPECT_LT(position[static_cast<size_t>(p)], position[static_cast<size_t>(n.id)]) << n.name;
}

TEST(Dag, ProducersAndUsersFollowValuesThroughMultiAndListOutputs) {
  Graph g = sample();
  Dag dag(g);
  EXPECT_EQ(dag.producers(4), ids({1, 3}));  // add reads b (max.dim #0) and e (split list #0)
  EXPECT_EQ(dag.users(0), ids({1, 2}));      // relu feeds max and mul
  EXPECT_EQ(dag.producers(5), ids({1, 3}));  // cond reads c (max.dim #1) and f (split list #1)
  EXPECT_TRUE(dag.producers(0).empty());
  EXPECT_TRUE(dag.users(6).empty());
}

TEST(Dag, AncestorConeHoldsOnlyWhatTheValuesNeed) {
  Graph g = sample();
  Dag dag(g);
  EXPECT_EQ(dag.ancestor_cone({g.find("g")}).nodes, ids({0, 1, 2, 3, 4}));
  EXPECT_EQ(dag.ancestor_cone({g.find("h")}).nodes, ids({0, 1, 2, 3, 5}));
  EXPECT_EQ(dag.ancestor_cone({g.find("b")}).nodes, ids({0, 1}));
  EXPECT_TRUE(dag.ancestor_cone({g.find("x")}).empty());  // a graph input needs no node
  EXPECT_EQ(dag.descendants(2).nodes, ids({3, 4, 5}));
}

TEST(Dag, FrontierOfACutListsValuesCrossingIt) {
  Graph g = sample();
  Dag dag(g);
  Frontier prefix = dag.frontier(Region{{0, 1, 2}});
  EXPECT_EQ(names(g, prefix.inputs), (std::vector<std::string>{"w", "x"}));
  EXPECT_EQ(names(g, prefix.outputs), (std::vector<std::string>{"b", "c", "d"}));  // a stays inside
  Frontier middle = dag.frontier(Region{{3}});
  EXPECT_EQ(names(g, middle.inputs), std::vector<std::string>{"d"});
  EXPECT_EQ(names(g, middle.outputs), (std::vector<std::string>{"e", "f"}));
  Frontier tail = dag.frontier(Region{{4, 5}});
  EXPECT_EQ(names(g, tail.outputs), (std::vector<std::string>{"g", "h"}));  // graph outputs leave the region
  EXPECT_TRUE(dag.frontier(Region{{6}}).outputs.empty());  // dead value: nobody outside reads it
}

TEST(Dag, AncestorClosedRegionsStartAtGraphInputs) {
  Graph g = sample();
  Dag dag(g);
  EXPECT_TRUE(dag.is_ancestor_closed(Region{{0, 1}}));
  EXPECT_TRUE(dag.is_ancestor_closed(dag.ancestor_cone({g.find("h")})));
  EXPECT_FALSE(dag.is_ancestor_closed(Region{{1}}));
  EXPECT_FALSE(dag.is_ancestor_closed(Region{{0, 4}}));
}

TEST(Dag, LastUseFreesEachValueAfterItsLastReader) {
  Graph g = sample();
  std::vector<NodeId> order(g.nodes().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<NodeId>(i);
  LastUse lu = last_uses(g, order);
  EXPECT_EQ(lu.position[static_cast<size_t>(g.find("a"))], 2);  // mul is a's last reader
  EXPECT_EQ(lu.position[static_cast<size_t>(g.find("x"))], 6);  // neg reads x last
  EXPECT_EQ(lu.position[static_cast<size_t>(g.find("g"))], LastUse::kKeep);
  EXPECT_EQ(lu.position[static_cast<size_t>(g.find("dead"))], LastUse::kUnused);
  EXPECT_EQ(names(g, lu.dies_after[2]), (std::vector<std::string>{"a", "w"}));  // mul reads both last
  EXPECT_EQ(names(g, lu.dies_after[4]), (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(names(g, lu.dies_after[5]), (std::vector<std::string>{"c", "f"}));
  EXPECT_EQ(names(g, lu.dies_after[6]), (std::vector<std::string>{"dead", "x"}));
  // Every non-output value dies exactly once.
  size_t died = 0;
  for (const auto& d : lu.dies_after) died += d.size();
  EXPECT_EQ(died, g.values().size() - 2);
}

TEST(Dag, SubgraphsAreGraphsOfTheirOwn) {
  Graph g = sample();
  const Node& cond = g.node(5);
  auto subs = cond.subgraphs();
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_EQ(subs[0]->name, "true_graph_0");
  Dag inner(*subs[0]->graph);
  EXPECT_EQ(inner.topological_order(), ids({0}));
  EXPECT_EQ(subs[0]->graph->value(subs[0]->graph->find("cos_out")).producer, 0);
}

}  // namespace
}  // namespace pt2diff
