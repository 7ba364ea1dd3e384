// tests/graphs/collectives_test.cpp — functional collectives read off nodes, and a graph cut at them (graphs/collectives.h):
// what pt2diff dist's simulation and rank-local programs rest on. No torch.
#include <gtest/gtest.h>

#include "graphs/collectives.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

Argument tensor(ValueId v) { return Argument{Argument::Kind::Tensor, v}; }
Argument text(const std::string& s) { return Argument{Argument::Kind::String, s}; }
Argument integer(int64_t i) { return Argument{Argument::Kind::Int, i}; }

/// x -> mm = relu(x) -> all_reduce(mm, "sum", "0") -> wait_tensor -> add(wait, mm): the TP block's shape, with the
/// kept `add` reading both the wait's result and a value from before the collective.
ExportedGraph tp_graph() {
  ExportedGraph ep;
  Graph& g = ep.graph;
  ValueId x = g.add_value("x", ValueKind::Tensor), r = g.add_value("relu", ValueKind::Tensor),
          ar = g.add_value("all_reduce", ValueKind::Tensor), w = g.add_value("wait_tensor", ValueKind::Tensor),
          out = g.add_value("add", ValueKind::Tensor);
  g.add_input(tensor(x));
  g.add_node(Node{0, "relu", "torch.ops.aten.relu.default", {{"self", tensor(x), false}}, {tensor(r)}, {}, {}, false});
  g.add_node(Node{0, "all_reduce", "torch.ops._c10d_functional.all_reduce.default",
                  {{"input", tensor(r), false}, {"reduce_op", text("sum"), false}, {"group_name", text("0"), false}}, {tensor(ar)}, {}, {}, false});
  g.add_node(Node{0, "wait_tensor", "torch.ops._c10d_functional.wait_tensor.default", {{"tensor", tensor(ar), false}}, {tensor(w)}, {}, {}, false});
  g.add_node(Node{0, "add", "torch.ops.aten.add.Tensor", {{"self", tensor(w), false}, {"other", tensor(r), false}}, {tensor(out)}, {}, {}, false});
  g.add_output(tensor(out));
  g.finalize();
  ep.input_specs.push_back(InputSpec{InputSpec::Kind::UserInput, tensor(x), "", true, {}});
  ep.output_specs.push_back(OutputSpec{OutputSpec::Kind::UserOutput, tensor(out), ""});
  return ep;
}

TEST(Collectives, EveryCallIsReadWithItsGroupAndReduction) {
  const ExportedGraph ep = tp_graph();
  const std::vector<CollectiveCall> calls = collective_calls(ep.graph);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, CollectiveCall::Op::AllReduce);
  EXPECT_EQ(calls[0].reduce, "sum");
  EXPECT_EQ(calls[0].group, "0");
  EXPECT_EQ(ep.graph.value(calls[0].input).name, "relu");
  EXPECT_EQ(calls[1].op, CollectiveCall::Op::Wait);
  EXPECT_STREQ(collective_op_name(calls[0].op), "all_reduce");
  EXPECT_TRUE(is_collective_target("torch.ops._c10d_functional.all_gather_into_tensor.default"));
  EXPECT_FALSE(is_collective_target("torch.ops.aten.add.Tensor"));
}

TEST(Collectives, PositionalArgumentsAndGatherSizesAreRead) {
  Graph g;
  ValueId x = g.add_value("x", ValueKind::Tensor), y = g.add_value("ag", ValueKind::Tensor);
  g.add_input(tensor(x));
  Node n{0, "ag", "torch.ops._c10d_functional.all_gather_into_tensor.default", {{"", tensor(x), false}, {"", integer(4), false},
                                                                                {"", text("1"), false}}, {tensor(y)}, {}, {}, false};
  std::string why;
  auto c = collective_call(n, why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->op, CollectiveCall::Op::AllGather);
  EXPECT_EQ(c->group_size, 4);
  EXPECT_EQ(c->group, "1");
}

TEST(Collectives, AnUnknownCollectiveIsRefusedByName) {
  Node n{0, "arc", "torch.ops._c10d_functional.all_reduce_coalesced.default", {}, {}, {}, {}, false};
  std::string why;
  EXPECT_FALSE(collective_call(n, why));
  EXPECT_NE(why.find("tensor argument"), std::string::npos) << why;
  Node m{0, "x", "torch.ops._c10d_functional.isend.default", {{"input", tensor(0), false}}, {}, {}, {}, false};
  EXPECT_FALSE(collective_call(m, why));
  EXPECT_NE(why.find("pt2diff simulates all_reduce"), std::string::npos) << why;
}

TEST(Collectives, TheCutFeedsWhatTheCollectivesMadeAsInputs) {
  const ExportedGraph ep = tp_graph();
  const CutGraph cut = cut_at_collectives(ep);
  EXPECT_EQ(cut.removed, (std::vector<std::string>{"all_reduce", "wait_tensor"}));
  EXPECT_EQ(cut.fed, std::vector<std::string>{"wait_tensor"});  // all_reduce's own value is read by the wait only
  const Graph& g = cut.graph.graph;
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].name, "relu");
  EXPECT_EQ(g.nodes()[1].name, "add");
  EXPECT_EQ(g.value(g.find("wait_tensor")).producer, kGraphInput);
  ASSERT_EQ(cut.graph.input_specs.size(), 2u);
  EXPECT_EQ(cut.graph.input_specs[1].kind, InputSpec::Kind::UserInput);
  EXPECT_EQ(g.input_values().size(), 2u);
  EXPECT_TRUE(collective_calls(g).empty());
}

}  // namespace
}  // namespace pt2diff
