// tests/engine/sweep/sweep_test.cpp — a sweep judges like diff() at every point, finds the smallest
// passing tolerance to 0.1%, and compiles nothing twice.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "../../test_support.h"
#include "pt2diff/compare.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/error.h"
#include "pt2diff/sweep.h"
#include "pt2diff/values.h"

namespace pt2diff {
namespace {

using testing::fixture;

BoundInputs inputs_of(const Program& p, const std::string& name) {
  return bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt")));
}

TEST(ParseTolerances, RangesAndLists) {
  const auto grid = parse_tolerances("1e-7:1e-1:13");
  ASSERT_EQ(grid.size(), 13u);
  EXPECT_DOUBLE_EQ(grid.front(), 1e-7);
  EXPECT_NEAR(grid.back(), 1e-1, 1e-15);
  EXPECT_NEAR(grid[1], std::pow(10.0, -6.5), 1e-18);
  EXPECT_EQ(parse_tolerances("1e-2,1e-4,1e-3"), (std::vector<double>{1e-4, 1e-3, 1e-2}));
  for (const char* bad : {"", "abc", "1e-3:1e-1", "1e-1:1e-3:5", "1e-3:1e-1:1", "0,1e-3", "-1e-3", "1e-3,,1e-2"}) {
    try {
      parse_tolerances(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("forms: LO:HI:N"), std::string::npos) << e.what();
    }
  }
}

TEST(Sweep, EveryPointJudgesLikeADiffAtThatTolerance) {
  Program p = load_program(fixture("attention_core.pt2"));
  BoundInputs in = inputs_of(p, "attention_core");
  SweepOptions o;
  o.diff.compiled = "fault:aten.bmm#2:noise=0.001";
  o.tols = parse_tolerances("1e-6:1e-2:9");
  SweepResult s = sweep(p, in, o);
  ASSERT_EQ(s.points.size(), 9u);
  for (const SweepPoint& point : s.points) {
    DiffOptions at = o.diff;
    at.rule.tol = point.tol;
    at.localize.enabled = false;
    DiffResult r = diff(p, in, at);
    ASSERT_EQ(point.outputs.size(), r.outputs.size());
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      EXPECT_EQ(point.outputs[i].pass, r.outputs[i].verdict.pass) << "tol " << point.tol;
      EXPECT_EQ(point.outputs[i].reason, r.outputs[i].verdict.reason) << "tol " << point.tol;
    }
    size_t local = 0;
    for (const NodeError& n : r.nodes) local += n.compiled_local_fails;
    EXPECT_EQ(point.local_failures, local) << "tol " << point.tol;
  }
  // The planted node is the first to fail locally while any point fails.
  EXPECT_EQ(s.points.front().first_diverging, "bmm_1");
  EXPECT_TRUE(s.points.back().first_diverging.empty());
  // Two compiles (graph, exploded) serve all nine points.
  EXPECT_EQ(s.compiles, 2u);
}

TEST(Sweep, TheMinimumPassingToleranceIsTheEdge) {
  Program p = load_program(fixture("attention_core.pt2"));
  BoundInputs in = inputs_of(p, "attention_core");
  SweepOptions o;
  o.diff.compiled = "fault:aten.bmm#2:noise=0.001";
  o.tols = {1e-3};
  o.multipliers = {2, 3};
  SweepResult s = sweep(p, in, o);
  ASSERT_EQ(s.min_passing_tol.size(), 1u);
  ASSERT_EQ(s.min_passing_tol[0].size(), 2u);
  ASSERT_EQ(s.run.values->outputs.size(), s.run.outputs.size());
  const OutputValues& out = s.run.values->outputs[0];
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_TRUE(s.min_passing_tol[0][k]);
    const double edge = *s.min_passing_tol[0][k];
    ToleranceRule rule = o.diff.rule;
    rule.fp32_multiplier = rule.low_precision_multiplier = o.multipliers[k];
    rule.tol = edge;
    EXPECT_TRUE(judge(out.compiled, out.eager, out.fp64, rule).pass) << edge;
    rule.tol = edge / 1.002;
    EXPECT_FALSE(judge(out.compiled, out.eager, out.fp64, rule).pass) << edge;
  }
  // A larger multiplier never needs a larger tolerance.
  EXPECT_LE(*s.min_passing_tol[0][1], *s.min_passing_tol[0][0]);
}

TEST(Sweep, LocalizesFailingPointsWithoutCompilingAProbeTwice) {
  Program p = load_program(fixture("attention_core.pt2"));
  BoundInputs in = inputs_of(p, "attention_core");
  SweepOptions o;
  o.diff.compiled = "fault:aten.bmm#2:noise=0.001";
  o.tols = parse_tolerances("1e-6:1e-2:5");
  o.localize = true;
  SweepResult s = sweep(p, in, o);
  size_t localized = 0, probes = 0;
  for (const SweepPoint& point : s.points) {
    EXPECT_EQ(point.localization.has_value(), point.failing_outputs > 0);
    if (!point.localization) continue;
    ++localized;
    probes += point.localization->compiles;
    EXPECT_EQ(point.localization->culprit.nodes, std::vector<std::string>{"bmm_1"});
  }
  ASSERT_GE(localized, 2u);
  // Every localization asks for its probes, but the shared backend compiles each region once.
  EXPECT_LT(s.compiles, 2 + probes);
}

TEST(Sweep, RejectsRulesTolDoesNotAffect) {
  Program p = load_program(fixture("mlp.pt2"));
  SweepOptions o;
  o.diff.compiled = "eager";
  o.tols = {1e-3};
  o.diff.rule = parse_rule("ulp:4");
  EXPECT_THROW(sweep(p, inputs_of(p, "mlp"), o), Error);
  o.diff.rule = parse_rule("same");
  o.tols.clear();
  EXPECT_THROW(sweep(p, inputs_of(p, "mlp"), o), Error);
}

TEST(SweepCli, WritesTableCsvJsonAndPlot) {
  testing::ScratchDir dir("sweep");
  const std::string csv = dir.file("sweep.csv"), json = dir.file("sweep.json"), svg = dir.file("sweep.svg");
  auto r = testing::run_cli("sweep " + fixture("attention_core.pt2") + " " + fixture("attention_inputs.pt") +
                            " --compiled 'fault:aten.bmm#2:noise=0.001' --tol 1e-6:1e-2:5 --multiplier 2,3 --csv " + csv +
                            " --json " + json + " --plot " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("10 points, 2 compiles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("smallest tolerance at which each passes (multiplier 2 / 3)"), std::string::npos) << r.out;
  std::ifstream c(csv);
  std::string line;
  size_t rows = 0;
  while (std::getline(c, line)) ++rows;
  EXPECT_EQ(rows, 1u + 10u);  // header + (5 tols x 2 multipliers) x 1 output
  std::stringstream plot;
  plot << std::ifstream(svg).rdbuf();
  EXPECT_EQ(plot.str().rfind("<svg", 0), 0u);
  EXPECT_NE(plot.str().find("failing outputs"), std::string::npos);
  auto bad = testing::run_cli("sweep " + fixture("mlp.pt2") + " --compiled eager --tol 1e-3:1e-1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("a range needs three parts"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pt2diff
