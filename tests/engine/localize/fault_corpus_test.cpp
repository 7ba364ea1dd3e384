// tests/engine/localize/fault_corpus_test.cpp — planted faults over every fixture: each one that makes
// an output diverge is localized to the planted node, within the compile budget; faults the graph
// masks (an integer output, a normalization) and reordered summations give "no divergence".
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <iostream>

#include "../../test_support.h"
#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

using testing::fixture;

struct Tally {
  int planted = 0, diverged = 0, localized = 0, masked = 0, benign = 0;
  size_t compiles = 0, budget = 0;
};

DiffResult with_fault(const Program& p, const BoundInputs& in, const std::string& spec) {
  DiffOptions o;
  o.compiled = "fault:" + spec;
  return diff(p, in, o);
}

bool names(const Culprit& c, const std::string& node) {
  return c.named() && std::find(c.nodes.begin(), c.nodes.end(), node) != c.nodes.end();
}

TEST(FaultCorpus, EveryDivergingFaultIsLocalizedToThePlantedNode) {
  Tally t;
  for (const std::string& name : testing::runnable_fixtures()) {
    if (testing::base_name(name) == "dropout") continue;  // random ops: covered by the interpreter tests
    Program p = load_program(fixture(name + ".pt2"));
    BoundInputs in = bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt")));
    for (const Node& n : p.ir.graph.nodes()) {
      for (const char* kind : {"scale=0.05", "noise=0.05", "bf16", "nan"}) {
        const std::string spec = fmt::format("{}:{}", n.name, kind);
        DiffResult r = with_fault(p, in, spec);
        ++t.planted;
        if (!r.diverged) {
          ++t.masked;
          continue;
        }
        ++t.diverged;
        ASSERT_TRUE(r.localization) << name << " " << spec;
        const Localization& l = *r.localization;
        t.compiles += l.compiles;
        t.budget += l.budget;
        EXPECT_LE(l.compiles, l.budget) << name << " " << spec;
        if (names(l.culprit, n.name)) ++t.localized;
        else ADD_FAILURE() << name << " fault:" << spec << " localized as " << culprit_kind_name(l.culprit.kind) << ": "
                           << l.culprit.summary;
      }
    }
  }
  std::cout << fmt::format("planted {} faults: {} diverged, {} localized to the planted node ({:.1f}%), {} masked by the graph; "
                           "compiles {} against a budget of {} ({:.2f} per localization)\n",
                           t.planted, t.diverged, t.localized, t.diverged ? 100.0 * t.localized / t.diverged : 0.0, t.masked,
                           t.compiles, t.budget, t.diverged ? static_cast<double>(t.compiles) / t.diverged : 0.0);
  EXPECT_GE(t.diverged, 200);
  EXPECT_EQ(t.localized, t.diverged);
}

TEST(FaultCorpus, ReorderedSummationIsWithinTheNoiseFloor) {
  int reordered = 0;
  for (const std::string& name : testing::runnable_fixtures()) {
    if (testing::base_name(name) == "dropout") continue;
    Program p = load_program(fixture(name + ".pt2"));
    BoundInputs in = bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt")));
    for (const Node& n : p.ir.graph.nodes()) {
      DiffResult r;
      try {
        r = with_fault(p, in, n.name + ":reorder");
      } catch (const Error&) {
        continue;  // not a reduction
      }
      ++reordered;
      EXPECT_FALSE(r.diverged) << name << " " << n.name;
      EXPECT_FALSE(r.localization) << name << " " << n.name;
    }
  }
  std::cout << fmt::format("{} reductions reordered: none diverged\n", reordered);
  EXPECT_GE(reordered, 20);
}

}  // namespace
}  // namespace pt2diff
