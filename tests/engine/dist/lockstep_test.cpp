// tests/engine/dist/lockstep_test.cpp — every rank's graph in lockstep, collectives simulated (engine/dist/lockstep.h): each
// collective's result against the same fold done here with ATen, in each precision; ranks that desync are one error
// naming both, never a hang. Hand-made graphs of functional collectives (pt2diff dist's captured graphs are tested end to
// end by tests/python/pt2diff_capture/test_capture_ranks.py).
#include <gtest/gtest.h>

#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/tensor.h>

#include "engine/dist/lockstep.h"
#include "pt2diff/error.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

Argument tensor(ValueId v) { return Argument{Argument::Kind::Tensor, v}; }
Argument text(const std::string& s) { return Argument{Argument::Kind::String, s}; }
Argument integer(int64_t i) { return Argument{Argument::Kind::Int, i}; }

TensorMeta float_meta(int64_t n) {
  TensorMeta m;
  m.dtype = DType::Float;
  m.sizes = {SymInt{n, {}, {}}};
  m.strides = {SymInt{1, {}, {}}};
  return m;
}

/// x (float32[4]) -> COLLECTIVE(x, args...) -> wait_tensor -> output; `op` empty: x -> relu -> output, no collective.
Program one_collective(const std::string& op, std::vector<NamedArgument> args, int64_t out_size) {
  Program p;
  p.path = op.empty() ? "no_collective.pt2" : op + ".pt2";
  Graph& g = p.ir.graph;
  const ValueId x = g.add_value("x", ValueKind::Tensor, float_meta(4));
  const ValueId c = g.add_value("c", ValueKind::Tensor, float_meta(out_size));
  const ValueId w = g.add_value("w", ValueKind::Tensor, float_meta(out_size));
  g.add_input(tensor(x));
  if (op.empty()) {
    g.add_node(Node{0, "relu", "torch.ops.aten.relu.default", {{"self", tensor(x), false}}, {tensor(w)}, {}, {}, false});
  } else {
    args.insert(args.begin(), {"input", tensor(x), false});
    g.add_node(Node{0, op, "torch.ops._c10d_functional." + op + ".default", args, {tensor(c)}, {}, {}, false});
    g.add_node(Node{0, "wait_tensor", "torch.ops._c10d_functional.wait_tensor.default", {{"tensor", tensor(c), false}}, {tensor(w)}, {}, {},
                    false});
  }
  g.add_output(tensor(w));
  g.finalize();
  p.ir.input_specs.push_back(InputSpec{InputSpec::Kind::UserInput, tensor(x), "", true, {}});
  p.ir.output_specs.push_back(OutputSpec{OutputSpec::Kind::UserOutput, tensor(w), ""});
  return p;
}

BoundInputs bound(const at::Tensor& x) {
  BoundInputs b;
  b.entries.push_back({"x", 0, InputValue(x)});
  return b;
}

/// Both ranks' output of `programs` fed x0 and x1, at `precision`.
std::vector<at::Tensor> run(const std::vector<Program>& programs, const at::Tensor& x0, const at::Tensor& x1, Precision precision) {
  const BoundInputs b0 = bound(x0), b1 = bound(x1);
  const std::vector<RankRun> runs =
      run_ranks_in_lockstep({&programs[0], &programs[1]}, {&b0, &b1}, precision, GroupRanks{{"0", {0, 1}}});
  return {runs[0].result.outputs.at(0).toTensor(), runs[1].result.outputs.at(0).toTensor()};
}

const at::Tensor kX0 = at::tensor({0.1f, 1e8f, -3.0f, 0.7f});
const at::Tensor kX1 = at::tensor({0.2f, 1.0f, 3.0f, 1e-8f});

TEST(Lockstep, AllReduceFoldsInRankOrderInEachRunsPrecision) {
  const Program p = one_collective("all_reduce", {{"reduce_op", text("sum"), false}, {"group_name", text("0"), false}}, 4);
  const std::vector<Program> ranks{p, p};
  const auto eager = run(ranks, kX0, kX1, Precision::Native);
  EXPECT_TRUE(at::equal(eager[0], kX0.add(kX1))) << eager[0];  // float32: 1e8 + 1 rounds to 1e8
  EXPECT_TRUE(at::equal(eager[1], eager[0]));
  const auto fp64 = run(ranks, kX0, kX1, Precision::Fp64);
  EXPECT_EQ(fp64[0].scalar_type(), at::kDouble);
  EXPECT_TRUE(at::equal(fp64[0], kX0.to(at::kDouble).add(kX1.to(at::kDouble)))) << fp64[0];  // 1e8 + 1 exactly
}

TEST(Lockstep, AllGatherConcatenatesAndReduceScatterKeepsEachRanksChunk) {
  const Program gather = one_collective("all_gather_into_tensor", {{"group_size", integer(2), false}, {"group_name", text("0"), false}}, 8);
  const auto g = run({gather, gather}, kX0, kX1, Precision::Native);
  EXPECT_TRUE(at::equal(g[0], at::cat({kX0, kX1}, 0)));
  EXPECT_TRUE(at::equal(g[1], g[0]));
  const Program scatter = one_collective("reduce_scatter_tensor", {{"reduce_op", text("avg"), false}, {"group_size", integer(2), false},
                                                                   {"group_name", text("0"), false}}, 2);
  const auto s = run({scatter, scatter}, kX0, kX1, Precision::Native);
  const at::Tensor mean = kX0.add(kX1).div(2.0);
  EXPECT_TRUE(at::equal(s[0], mean.slice(0, 0, 2))) << s[0];
  EXPECT_TRUE(at::equal(s[1], mean.slice(0, 2, 4))) << s[1];
}

TEST(Lockstep, RanksThatIssueOtherCollectivesDesyncInOneLine) {
  const Program reduce = one_collective("all_reduce", {{"reduce_op", text("sum"), false}, {"group_name", text("0"), false}}, 4);
  const Program gather = one_collective("all_gather_into_tensor", {{"group_size", integer(2), false}, {"group_name", text("0"), false}}, 8);
  try {
    run({reduce, gather}, kX0, kX1, Precision::Native);
    FAIL() << "expected a desync";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("desync at collective #1 over group '0'"), std::string::npos) << m;
    EXPECT_NE(m.find("all_reduce(sum)"), std::string::npos) << m;
    EXPECT_NE(m.find("all_gather_into_tensor"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(Lockstep, ARankThatEndsWithoutTheCollectiveIsNamedNotWaitedFor) {
  const Program reduce = one_collective("all_reduce", {{"reduce_op", text("sum"), false}, {"group_name", text("0"), false}}, 4);
  const Program none = one_collective("", {}, 4);
  try {
    run({reduce, none}, kX0, kX1, Precision::Native);
    FAIL() << "expected a desync";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 1 ended its graph without collective #1 over group '0', which rank 0 issues at node 'all_reduce'"),
              std::string::npos) << m;
  }
}

TEST(Lockstep, AGroupTheCaptureDoesNotListIsABadCapture) {
  const Program p = one_collective("all_reduce", {{"reduce_op", text("sum"), false}, {"group_name", text("7"), false}}, 4);
  const BoundInputs b0 = bound(kX0), b1 = bound(kX1);
  try {
    run_ranks_in_lockstep({&p, &p}, {&b0, &b1}, Precision::Native, GroupRanks{{"0", {0, 1}}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("uses group '7', which the capture's index does not list"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pt2diff
