// tests/engine/diff_test.cpp — the main job on fixtures: streamed per-node errors and their ranking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../test_support.h"
#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

using testing::fixture;

DiffResult run(const std::string& name) {
  Program p = load_program(fixture(name + ".pt2"));
  DiffOptions o;
  o.compiled = "eager";  // the noise floor: these tests are about eager and fp64
  return diff(p, bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt"))), o);
}

TEST(Diff, Bf16BlockErrorIsBf16RoundingAtScale) {
  DiffResult r = run("bf16_block");
  ASSERT_FALSE(r.ranking.empty());
  // In ulp the bf16 matmul looks worst (elements near zero have tiny ulps) ...
  const NodeError& most_ulp = *std::max_element(r.nodes.begin(), r.nodes.end(),
                                                 [](const NodeError& a, const NodeError& b) { return a.local_ulp < b.local_ulp; });
  EXPECT_EQ(most_ulp.name, "matmul");
  EXPECT_NE(most_ulp.source.find("make_fixtures.py:"), std::string::npos);
  EXPECT_GT(most_ulp.local_ulp, 10);
  // ... yet at each value's scale every node is within bf16's rounding (unit roundoff 2^-8), so the
  // ranking, which sorts by relative error, does not single it out: compiled = eager, no ratio above 1.
  for (const NodeError& n : r.nodes) {
    EXPECT_LE(n.local_relative, std::ldexp(1.0, -8)) << n.name;
    EXPECT_LE(n.compiled_vs_eager, 1) << n.name;
  }
  // A correctly rounded bf16 op introduces at most half an ulp: casts and elementwise ops stay low.
  for (const NodeError& n : r.nodes)
    if (n.target == "aten.to.dtype") {
      EXPECT_LE(n.local_ulp, 0.5) << n.name;
    }
  EXPECT_FALSE(r.diverged);  // compiled = eager agrees with itself
  EXPECT_NE(std::find(r.fixups.begin(), r.fixups.end(), "aten.to.dtype: dtype bfloat16 -> float64"), r.fixups.end());
}

TEST(Diff, Fp32GraphsHaveTinyErrorAndAgree) {
  for (const char* name : {"mlp", "attention_core", "conv_bn_relu", "ln_softmax_gelu_core", "cond"}) {
    DiffResult r = run(name);
    EXPECT_FALSE(r.diverged) << name;
    for (const OutputVerdict& o : r.outputs) {
      EXPECT_TRUE(o.verdict.pass) << name << " " << o.name;
      EXPECT_LT(o.eager_to_fp64.max_rel, 1e-3) << name << " " << o.name;
    }
    size_t values = 0;
    for (const NodeError& n : r.nodes) values += n.values.size();
    EXPECT_GE(values, r.nodes.size()) << name;
  }
}

TEST(Diff, IntegerOutputsAreComparedExactly) {
  DiffResult r = run("multi_output_core");
  bool saw_indices = false;
  for (const NodeError& n : r.nodes)
    for (const ValueError& v : n.values)
      if (v.dtype == "int64") {
        saw_indices = true;
        EXPECT_TRUE(v.local.exact_kind);
        EXPECT_EQ(v.propagated.mismatches, 0) << v.name;  // argmax of fp32 vs fp64 agrees here
      }
  EXPECT_TRUE(saw_indices);
}

TEST(Diff, UnknownBackendIsAUsageError) {
  Program p = load_program(fixture("mlp.pt2"));
  DiffOptions o;
  o.compiled = "nvcc";
  try {
    diff(p, bind_inputs(p, *p.sample_inputs), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Usage);
    EXPECT_NE(std::string(e.what()).find("available: inductor, eager"), std::string::npos);
  }
}

TEST(DiffCli, MainJobPrintsTheReportAndWritesJson) {
  auto r = testing::run_cli(fixture("bf16_block.pt2") + " " + fixture("bf16_block_inputs.pt") + " --compiled eager --json /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nodes introducing the most error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos);
  EXPECT_NE(r.out.find("AGREE"), std::string::npos);
  auto bad = testing::run_cli(fixture("mlp.pt2") + " " + fixture("malformed/inputs_shape.pt"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("input 'x' has shape [4, 31]"), std::string::npos) << bad.err;
  auto unsupported = testing::run_cli(fixture("python_only_ops.pt2"));
  EXPECT_EQ(unsupported.exit_code, 2);
  EXPECT_NE(unsupported.err.find("cannot run 1 node: node 'scaled_tanh'"), std::string::npos) << unsupported.err;
}

}  // namespace
}  // namespace pt2diff
