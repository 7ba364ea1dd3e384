// tests/graphs/graph_test.cpp — IR invariants and vocabulary.
#include <gtest/gtest.h>

#include "pt2diff/error.h"
#include "pt2diff/graph.h"

namespace pt2diff {
namespace {

Argument tensor(ValueId v) { return Argument{Argument::Kind::Tensor, v}; }

TEST(Graph, DTypeMappingFollowsTheExportSchemaTable) {
  // The table in shared/notes/pt2-archive-and-dispatch.md: export numbers differ from c10's.
  EXPECT_EQ(dtype_from_export(7), DType::Float);
  EXPECT_EQ(static_cast<int>(*dtype_from_export(7)), 6);
  EXPECT_EQ(dtype_from_export(13), DType::BFloat16);
  EXPECT_EQ(static_cast<int>(*dtype_from_export(13)), 15);
  EXPECT_EQ(static_cast<int>(*dtype_from_export(12)), 11);  // bool
  EXPECT_EQ(static_cast<int>(*dtype_from_export(28)), 27);  // uint16
  EXPECT_EQ(static_cast<int>(*dtype_from_export(29)), 24);  // float8_e4m3fn
  EXPECT_EQ(static_cast<int>(*dtype_from_export(30)), 23);  // float8_e5m2
  EXPECT_EQ(static_cast<int>(*dtype_from_export(31)), 26);
  EXPECT_EQ(static_cast<int>(*dtype_from_export(32)), 25);
  EXPECT_FALSE(dtype_from_export(0).has_value());
  EXPECT_FALSE(dtype_from_export(99).has_value());
  EXPECT_EQ(dtype_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(element_size(DType::ComplexDouble), 16);
  EXPECT_TRUE(is_floating(DType::Float8_e4m3fn));
  EXPECT_FALSE(is_floating(DType::Long));
}

TEST(Graph, FinalizeComputesProducersUsersAndOutputs) {
  Graph g;
  ValueId x = g.add_value("x", ValueKind::Tensor);
  ValueId a = g.add_value("a", ValueKind::Tensor);
  ValueId b = g.add_value("b", ValueKind::Tensor);
  g.add_input(tensor(x));
  g.add_node(Node{0, "a", "torch.ops.aten.relu.default", {{"self", tensor(x), false}}, {tensor(a)}, {}, {}, false});
  g.add_node(Node{0, "b", "torch.ops.aten.add.Tensor", {{"self", tensor(a), false}, {"other", tensor(a), false}}, {tensor(b)}, {}, {}, false});
  g.add_output(tensor(b));
  g.finalize();
  EXPECT_EQ(g.value(x).producer, kGraphInput);
  EXPECT_EQ(g.value(a).producer, 0);
  EXPECT_EQ(g.value(a).users, std::vector<NodeId>{1});  // a used twice by node 1, listed once
  EXPECT_TRUE(g.value(b).is_graph_output);
  EXPECT_EQ(g.find("b"), b);
  EXPECT_EQ(g.find("nope"), kNoValue);
}

TEST(Graph, FinalizeRejectsUseBeforeDefinitionNamingTheNode) {
  Graph g;
  ValueId x = g.add_value("x", ValueKind::Tensor);
  ValueId a = g.add_value("a", ValueKind::Tensor);
  g.add_node(Node{0, "relu", "torch.ops.aten.relu.default", {{"self", tensor(x), false}}, {tensor(a)}, {}, {}, false});
  try {
    g.finalize();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'relu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

TEST(Graph, FinalizeRejectsRedefinitionAndUndefinedOutputs) {
  Graph g;
  ValueId x = g.add_value("x", ValueKind::Tensor);
  g.add_input(tensor(x));
  g.add_node(Node{0, "again", "torch.ops.aten.relu.default", {{"self", tensor(x), false}}, {tensor(x)}, {}, {}, false});
  EXPECT_THROW(g.finalize(), Error);

  Graph h;
  ValueId y = h.add_value("y", ValueKind::Tensor);
  h.add_output(tensor(y));
  EXPECT_THROW(h.finalize(), Error);
  EXPECT_THROW(h.add_value("y", ValueKind::Tensor), Error);
}

TEST(Graph, ArgumentValuesCoverEveryReferringKind) {
  Argument opt{Argument::Kind::OptionalTensors, std::vector<ValueId>{kNoValue, 3}};
  EXPECT_EQ(opt.tensor_values(), std::vector<ValueId>{3});
  Argument syms{Argument::Kind::SymInts, std::vector<SymArg>{{kNoValue, int64_t{4}}, {7, int64_t{0}}}};
  EXPECT_TRUE(syms.tensor_values().empty());
  EXPECT_EQ(syms.values(), std::vector<ValueId>{7});
  Argument nested{Argument::Kind::NestedTensors, std::vector<std::vector<ValueId>>{{1, 2}, {5}}};
  EXPECT_EQ(nested.tensor_values(), (std::vector<ValueId>{1, 2, 5}));
  Argument none{};
  EXPECT_TRUE(none.values().empty());
}

TEST(Graph, SourceInfoPicksTheUsersFrameNotTorchInternals) {
  SourceInfo s;
  s.stack_trace =
      "File \"/home/me/model.py\", line 39, in forward\n    h = self.ln(self.lin(x)).softmax(-1)\n"
      "  File \"/usr/lib/python3/site-packages/torch/nn/modules/linear.py\", line 134, in forward\n"
      "    return F.linear(input, self.weight, self.bias)";
  s.nn_module_stack = {{"L__self__", "", "M"}, {"L__self__lin", "lin", "torch.nn.modules.linear.Linear"}};
  EXPECT_EQ(s.user_frame(), "model.py:39 in forward: h = self.ln(self.lin(x)).softmax(-1)");
  EXPECT_EQ(s.module_path(), "lin");
  EXPECT_EQ(SourceInfo{}.user_frame(), "");
}

TEST(Graph, TensorMetaShapeAndNumel) {
  TensorMeta m;
  m.sizes = {SymInt{{}, "s77", 6}, SymInt{16, {}, {}}};
  EXPECT_TRUE(m.is_dynamic());
  EXPECT_EQ(m.shape_str(), "[s77, 16]");
  EXPECT_EQ(m.numel(), 96);
  m.sizes[0].hint.reset();
  EXPECT_FALSE(m.numel().has_value());
}

}  // namespace
}  // namespace pt2diff
