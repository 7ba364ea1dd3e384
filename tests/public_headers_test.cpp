// tests/public_headers_test.cpp — the public headers for options, results, diff and sweep, and the
// verdict types, build without torch: this binary has no torch include path, so any ATen include
// they picked up would fail to compile here. What they implement without torch is tested too.
#include <gtest/gtest.h>

#include "pt2diff/diff.h"
#include "pt2diff/dist.h"
#include "pt2diff/error.h"
#include "pt2diff/failure.h"
#include "pt2diff/kernels.h"
#include "pt2diff/localize.h"
#include "pt2diff/option_table.h"
#include "pt2diff/options.h"
#include "pt2diff/region.h"
#include "pt2diff/results.h"
#include "pt2diff/sweep.h"
#include "pt2diff/verdict.h"
#include "graphs/graph_builder.h"

#include <set>

namespace pt2diff {
namespace {

/// Regions are the IR's vocabulary, without torch: x → relu → a; a, w → mul → m; m, a → add → y.
TEST(RegionSpecs, AreMadeFromTheGraphAlone) {
  testing::Builder b({"x", "w"});
  const NodeId relu = b.node("relu", "relu.default", {b.t("x")}, {b.t("a")});
  const NodeId mul = b.node("mul", "mul.Tensor", {b.t("a"), b.t("w")}, {b.t("m")});
  const NodeId add = b.node("add", "add.Tensor", {b.t("m"), b.t("a")}, {b.t("y")});
  const Graph g = b.finish({"y"});
  auto names = [&](const std::vector<ValueId>& vs) {
    std::vector<std::string> out;
    for (ValueId v : vs) out.push_back(g.value(v).name);
    return out;
  };
  const RegionSpec fused = RegionSpec::fused(g, {add, mul}, {g.find("y")});
  EXPECT_EQ(fused.nodes, (std::vector<NodeId>{mul, add})) << "sorted by id";
  EXPECT_EQ(names(fused.inputs), (std::vector<std::string>{"a", "w"}));
  EXPECT_EQ(names(fused.outputs), (std::vector<std::string>{"y"}));
  EXPECT_FALSE(fused.exploded);
  const RegionSpec ops = RegionSpec::exploded_ops(g, {relu, mul, add});
  EXPECT_TRUE(ops.exploded);
  EXPECT_EQ(names(ops.inputs), (std::vector<std::string>{"x", "a", "w", "m"})) << "every value any op reads";
  EXPECT_EQ(names(ops.outputs), (std::vector<std::string>{"a", "m", "y"}));
  EXPECT_EQ(fused.describe(g), "2 nodes, mul .. add");
}

TEST(RuleSpecs, ReadBackAsTheyAreWritten) {
  for (const char* spec : {"same", "allclose", "ulp:4", "ulp:0.5", "cosine:0.9999"}) EXPECT_EQ(rule_name(parse_rule(spec)), spec);
  EXPECT_EQ(rule_name(parse_rule("cosine")), "cosine:0.99");
  EXPECT_EQ(parse_rule("ulp:4").kind, ToleranceRule::Kind::Ulp);
  EXPECT_DOUBLE_EQ(parse_rule("ulp:4").max_ulp, 4);
}

TEST(RuleSpecs, AMalformedSpecIsAUsageErrorThatSaysWhatIsExpected) {
  for (const char* bad_spec : {"ulp", "ulp:x", "frobnicate", "same:3", "cosine:1e"}) {
    try {
      parse_rule(bad_spec);
      ADD_FAILURE() << bad_spec << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Usage) << bad_spec;
      EXPECT_NE(std::string(e.what()).find("--rule"), std::string::npos) << e.what();
    }
  }
}

TEST(FailureKinds, HaveTheNamesTheReportSchemaUses) {
  EXPECT_STREQ(failure_kind_name(FailureKind::CompileFailed), "compile_failed");
  EXPECT_STREQ(failure_kind_name(FailureKind::RunFailed), "run_failed");
  EXPECT_STREQ(failure_kind_name(FailureKind::WorkerDied), "worker_died");
  EXPECT_STREQ(failure_kind_name(FailureKind::TimedOut), "timed_out");
  EXPECT_STREQ(failure_kind_name(FailureKind::Unusable), "unusable");
  EXPECT_STREQ(failure_kind_name(FailureKind::OutOfMemory), "out_of_memory");
  EXPECT_STREQ(failure_kind_name(std::optional<FailureKind>{}), "");
  EXPECT_TRUE(loses_compiler(FailureKind::TimedOut));
  EXPECT_FALSE(loses_compiler(FailureKind::CompileFailed));
}

TEST(PublicHeaders, ResultsAreHeldWithoutTheirTensors) {
  // A result a tool reads (or a Python binding converts) needs no torch; its tensors stay behind
  // DiffResult::values until someone includes pt2diff/values.h.
  DiffResult r;
  r.outputs.push_back({});
  r.outputs.back().verdict.reason = "rmse_exceeds_bound";
  const DiffResult copy = r;
  EXPECT_EQ(copy.values, nullptr);
  EXPECT_EQ(copy.outputs.at(0).verdict.reason, "rmse_exceeds_bound");
  SweepOptions s;
  EXPECT_EQ(s.diff.compiled, "inductor");
  EXPECT_EQ(s.diff.rule.kind, ToleranceRule::Kind::Same);
}

// The option table (torch-free): its checks, in the CLI's and in Python's spelling.
TEST(OptionTable, ValuesAreCheckedWithOneLineNamingTheOption) {
  auto problem = [](const char* flag, const std::string& text) {
    try {
      parse_option(*find_option_flag(flag), text);
      return std::string("accepted");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Usage);
      return std::string(e.what());
    }
  };
  EXPECT_EQ(problem("--repeats", "0"), "--repeats 0: expected 1 to 100");
  EXPECT_EQ(problem("--repeats", "2.5"), "--repeats 2.5: not a whole number");
  EXPECT_EQ(problem("--bisect", "ternary"), "--bisect ternary: expected 'binary' or 'linear'");
  EXPECT_EQ(problem("--reference-device", "tpu"), "--reference-device tpu: expected 'auto', 'cpu' or 'cuda'");
  EXPECT_EQ(problem("--node-ratio", "-1"), "--node-ratio -1: expected a number >= 0");
  EXPECT_EQ(problem("--tol", "small"), "--tol small: not a number");
  EXPECT_EQ(problem("--max-memory", "lots"), "--max-memory lots: not a size (16G, 512M, 1.5T, bytes) or none");
  EXPECT_EQ(problem("--max-memory", "none"), "accepted");
  // The Python module names the keyword: the same check, Python's spelling.
  EXPECT_EQ(option_problem(*find_option_keyword("repeats"), int64_t{0}, "repeats"), "repeats=0: expected 1 to 100");
  EXPECT_EQ(option_problem(*find_option_keyword("bisect"), std::string("ternary"), "bisect"), "bisect='ternary': expected 'binary' or 'linear'");
  EXPECT_EQ(option_problem(*find_option_keyword("matmul_precision"), std::string(""), "matmul_precision"), "");  // unset: torch's default
  // Every flag and keyword is one row's.
  std::set<std::string> flags, keywords;
  for (const OptionSpec& spec : option_table()) {
    EXPECT_TRUE(flags.insert(spec.flag).second) << spec.flag;
    if (spec.keyword) {
      EXPECT_TRUE(keywords.insert(spec.keyword).second) << spec.keyword;
    }
  }
}

}  // namespace
}  // namespace pt2diff
