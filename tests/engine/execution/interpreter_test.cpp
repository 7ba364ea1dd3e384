// tests/engine/execution/interpreter_test.cpp — native mode reproduces Python eager bit for bit on
// every CPU fixture (eager run by the venv's Python on this machine, now: testing::eager_outputs);
// the fp64 mode matches Python's fp64 run to 1e-12; unsupported ops are named before anything runs.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/div.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/neg.h>
#include <c10/core/DefaultDtype.h>
#include <cstring>
#include <set>

#include "../../test_support.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {
namespace {

using testing::base_name;
using testing::fixture;

::testing::AssertionResult bit_equal(const at::Tensor& got, const at::Tensor& want) {
  if (got.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << got.scalar_type() << " vs " << want.scalar_type();
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  at::Tensor a = got.contiguous(), b = want.contiguous();
  if (std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) != 0) {
    at::Tensor diff = at::sub(a.to(at::kDouble), b.to(at::kDouble)).abs();
    return ::testing::AssertionFailure() << "values differ; max abs diff " << diff.max().item<double>();
  }
  return ::testing::AssertionSuccess();
}

class NativeMode : public ::testing::TestWithParam<std::string> {};

TEST_P(NativeMode, IsBitExactAgainstPythonEager) {
  const std::string name = GetParam();
  Program p = load_program(fixture(name + ".pt2"));
  Interpreter interpreter(p);
  BoundInputs in = bind_inputs(p, load_inputs(fixture(base_name(name) + "_inputs.pt")));
  at::manual_seed(1234);  // as tests/eager_reference.py seeds before every eager run (dropout)
  RunResult r = interpreter.run(in);
  UserInputs expected = load_inputs(testing::eager_outputs(name));
  ASSERT_EQ(r.outputs.size(), expected.args.size());
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].isTensor()) << "output " << i;
    EXPECT_TRUE(bit_equal(r.outputs[i].toTensor(), std::get<at::Tensor>(expected.args[i]))) << name << " output " << i;
  }
  EXPECT_TRUE(r.not_comparable.empty());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NativeMode,
                         ::testing::ValuesIn(testing::runnable_fixtures()),
                         [](const auto& info) { return info.param; });

/// max|got - want| / max|want|: the fp64 run must match Python's fp64 run of the same graph to 1e-12
/// of each output's scale. Both run the same float64 kernels, so most outputs are bit-identical;
/// the bound leaves room for a different summation order in a float64 kernel, nothing more.
::testing::AssertionResult close_fp64(const at::Tensor& got, const at::Tensor& want) {
  if (got.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << got.scalar_type() << " vs " << want.scalar_type();
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  if (!at::isFloatingType(want.scalar_type())) return bit_equal(got, want);
  double scale = want.numel() ? want.abs().max().item<double>() : 0.0;
  double err = want.numel() ? at::sub(got, want).abs().max().item<double>() : 0.0;
  if (err <= 1e-12 * std::max(scale, 1e-300)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "relative error " << err / scale;
}

class Fp64Mode : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp64Mode, MatchesPythonRunningTheGraphInFloat64) {
  const std::string name = GetParam();
  Program p = load_program(fixture(name + ".pt2"));
  Interpreter interpreter(p);
  BoundInputs in = bind_inputs(p, load_inputs(fixture(base_name(name) + "_inputs.pt")));
  RunOptions fp64;
  fp64.precision = Precision::Fp64;
  at::manual_seed(1234);
  RunResult r = interpreter.run(in, fp64);
  // Stored (written by make_fixtures.py) where the fp64 result is the same on every CPU; computed here for
  // random graphs, whose draws depend on the CPU vendor (testing::fp64_outputs).
  const bool random = base_name(name) == "dropout";
  UserInputs expected = load_inputs(random ? testing::fp64_outputs(name) : fixture(name + "_fp64_expected.pt"));
  ASSERT_EQ(r.outputs.size(), expected.args.size());
  for (size_t i = 0; i < r.outputs.size(); ++i)
    EXPECT_TRUE(close_fp64(r.outputs[i].toTensor(), std::get<at::Tensor>(expected.args[i]))) << name << " output " << i;
  // The process-wide default dtype is restored after the reference run.
  EXPECT_EQ(c10::get_default_dtype(), caffe2::TypeMeta::Make<float>());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp64Mode,
                         ::testing::ValuesIn(testing::runnable_fixtures()),
                         [](const auto& info) { return info.param; });

/// What lets the diff drop the fp64 values of cheap nodes and make them again when a later stage asks
/// (ReferenceRuns::fp64_of): each node the interpreter says it reruns exactly gives back, run alone on the
/// fp64 values its inputs had, the bits the lockstep's fp64 run made. Every fixture (one test: a process
/// each would cost more than the runs); none reruns a random node.
TEST(Fp64Rerun, GivesBackTheBitsOfTheLockstepRunOnEveryFixture) {
  size_t compared = 0;
  for (const std::string& name : testing::runnable_fixtures()) {
    SCOPED_TRACE(name);
    Program p = load_program(fixture(name + ".pt2"));
    Interpreter interpreter(p);
    if (interpreter.mutates_inputs()) continue;  // ops write in place: the diff keeps every value of such a graph
    BoundInputs in = bind_inputs(p, load_inputs(fixture(base_name(name) + "_inputs.pt")));
    const Graph& g = p.ir.graph;
    std::vector<c10::IValue> fp64 = graph_input_values(p, in);  // a graph input as bound: rerun_fp64 casts it
    std::vector<NodeId> rerunnable;
    at::manual_seed(1234);
    interpreter.run_lockstep(in, [&](const NodeStep& step) {
      const auto outs = step.node.output_values();
      for (size_t i = 0; i < outs.size(); ++i) fp64[static_cast<size_t>(outs[i])] = step.fp64[i];
      if (interpreter.reruns_exactly(step.node.id)) rerunnable.push_back(step.node.id);
    });
    for (NodeId id : rerunnable) {
      const Node& n = g.node(id);
      const std::vector<c10::IValue> again = interpreter.rerun_fp64(id, [&](ValueId v) { return fp64.at(static_cast<size_t>(v)); });
      const auto outs = n.output_values();
      ASSERT_EQ(again.size(), outs.size()) << n.name;
      for (size_t i = 0; i < outs.size(); ++i) {
        const c10::IValue& kept = fp64[static_cast<size_t>(outs[i])];
        if (!kept.isTensor()) continue;
        ASSERT_TRUE(again[i].isTensor()) << n.name;
        EXPECT_TRUE(bit_equal(again[i].toTensor(), kept.toTensor())) << n.name << " (" << n.target << ")";
        ++compared;
      }
    }
    for (const Node& n : g.nodes()) {
      if (n.target.find("dropout") != std::string::npos || n.target.find("rand") != std::string::npos) {
        EXPECT_FALSE(interpreter.reruns_exactly(n.id)) << n.name << " draws random numbers";
      }
    }
  }
  EXPECT_GT(compared, 100u);
  EXPECT_EQ(c10::get_default_dtype(), caffe2::TypeMeta::Make<float>());
}

TEST(Fp64Rerun, CoversPointwiseOpsAndViewsButNotMatmulsOrReductions) {
  Program p = load_program(fixture("bf16_block.pt2"));
  Interpreter interpreter(p);
  std::set<std::string> yes, no;
  for (const Node& n : p.ir.graph.nodes()) (interpreter.reruns_exactly(n.id) ? yes : no).insert(short_target(n.target));
  EXPECT_TRUE(yes.count("aten.mul.Tensor") || yes.count("aten.add.Tensor")) << ::testing::PrintToString(yes);
  ASSERT_TRUE(no.count("aten.matmul.default") && no.count("aten.sum.dim_IntList")) << ::testing::PrintToString(no);
  EXPECT_FALSE(yes.count("aten._assert_tensor_metadata.default"));
}

TEST(Interpreter, Fp64ModeReportsItsFixups) {
  Program p = load_program(fixture("bf16_block.pt2"));
  Interpreter interpreter(p);
  RunOptions fp64;
  fp64.precision = Precision::Fp64;
  RunResult r = interpreter.run(bind_inputs(p, load_inputs(fixture("bf16_block_inputs.pt"))), fp64);
  EXPECT_NE(std::find(r.fixups.begin(), r.fixups.end(), "aten.to.dtype: dtype bfloat16 -> float64"), r.fixups.end())
      << ::testing::PrintToString(r.fixups);
  EXPECT_NE(std::find(r.fixups.begin(), r.fixups.end(), "aten._assert_tensor_metadata.default: skipped (asserts the native dtype)"),
            r.fixups.end()) << ::testing::PrintToString(r.fixups);
  EXPECT_TRUE(interpreter.run(bind_inputs(p, load_inputs(fixture("bf16_block_inputs.pt")))).fixups.empty());
}

TEST(Interpreter, RandomNodesDrawTheSameStreamInEveryLockstepRun) {
  for (const char* name : {"dropout", "dropout_core"}) {
    Program p = load_program(fixture(std::string(name) + ".pt2"));
    Interpreter interpreter(p);
    BoundInputs in = bind_inputs(p, load_inputs(fixture("dropout_inputs.pt")));
    double worst_local_rel = 0;
    at::manual_seed(1234);
    LockstepResult r = interpreter.run_lockstep(in, [&](const NodeStep& step) {
      for (size_t i = 0; i < step.native.size(); ++i)
        if (step.local[i].isTensor() && at::isFloatingType(step.local[i].toTensor().scalar_type())) {
          at::Tensor ref = step.fp64[i].toTensor();
          double err = at::sub(step.local[i].toTensor().to(at::kDouble), ref).abs().max().item<double>();
          double scale = ref.abs().max().item<double>();
          worst_local_rel = std::max(worst_local_rel, scale > 0 ? err / scale : err);
        }
    });
    ASSERT_EQ(r.native.random_nodes.size(), 1u) << name;
    // Same mask in all three runs: only float32 rounding separates local from fp64.
    EXPECT_LT(worst_local_rel, 1e-6) << name;
    // The native stream is that of a plain native run: same numbers as Python with the same seed.
    UserInputs expected = load_inputs(testing::eager_outputs(name));
    EXPECT_TRUE(bit_equal(r.native.outputs[0].toTensor(), std::get<at::Tensor>(expected.args[0]))) << name;
  }
}

TEST(Interpreter, NamesUnsupportedOpsBeforeRunning) {
  Program p = load_program(fixture("python_only_ops.pt2"));
  try {
    Interpreter interpreter(p);
    FAIL() << "planned an op that only exists in Python";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    EXPECT_NE(what.find("cannot run 1 node: node 'scaled_tanh' (pt2diff_fixtures.scaled_tanh.default) at make_fixtures.py:"),
              std::string::npos) << what;
  }
}

TEST(Interpreter, DynamicBatchRunsAtAnySizeInRange) {
  Program p = load_program(fixture("dynamic_batch.pt2"));
  Interpreter interpreter(p);
  // y.reshape(batch * 2, 4).sum(0) with identical rows: the result is batch x (y[:4] + y[4:]), so
  // result / batch is the same at every size if the batch size flowed through sym_size and
  // _operator.mul into the reshape correctly.
  at::Tensor per_row;
  for (int64_t batch : {2, 17, 64}) {
    UserInputs in;
    in.origin = "test";
    in.args.push_back(at::ones({batch, 16}));
    at::Tensor out = interpreter.run(bind_inputs(p, in)).outputs[0].toTensor();
    ASSERT_EQ(out.sizes(), at::IntArrayRef({4}));
    at::Tensor normalized = out.div(static_cast<double>(batch));
    if (!per_row.defined()) per_row = normalized;
    EXPECT_TRUE(at::allclose(normalized, per_row, 1e-5, 1e-6)) << batch;
  }
}

TEST(Interpreter, CondTakesTheBranchThePredicateSays) {
  Program p = load_program(fixture("cond.pt2"));
  Interpreter interpreter(p);
  UserInputs pos, neg;
  pos.origin = neg.origin = "test";
  pos.args.push_back(at::ones({4, 8}));
  neg.args.push_back(at::neg(at::ones({4, 8})));
  // Both branches run and give different results (cos*2 vs sin+1 of the same linear output).
  auto a = interpreter.run(bind_inputs(p, pos)).outputs[0].toTensor();
  auto b = interpreter.run(bind_inputs(p, neg)).outputs[0].toTensor();
  EXPECT_FALSE(at::equal(a, b));
}

TEST(Interpreter, FreesValuesAfterTheirLastUse) {
  Program p = load_program(fixture("attention_core.pt2"));
  Interpreter interpreter(p);
  BoundInputs in = bind_inputs(p, load_inputs(fixture("attention_inputs.pt")));
  // Count live intermediate tensors seen by the callback versus kept: with freeing on, the
  // callback still sees every node's outputs, and results are identical either way.
  int64_t nodes_seen = 0;
  RunOptions keep;
  keep.free_at_last_use = false;
  RunOptions free;
  free.on_node = [&](const Node&, const std::vector<c10::IValue>& outs) {
    ++nodes_seen;
    for (const auto& o : outs) EXPECT_FALSE(o.isNone());
  };
  auto a = interpreter.run(in, keep).outputs[0].toTensor();
  auto b = interpreter.run(in, free).outputs[0].toTensor();
  EXPECT_EQ(nodes_seen, static_cast<int64_t>(p.ir.graph.nodes().size()));
  EXPECT_TRUE(bit_equal(a, b));
}

}  // namespace
}  // namespace pt2diff
