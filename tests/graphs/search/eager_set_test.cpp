// tests/graphs/search/eager_set_test.cpp — the smallest eager set's search (eager_set.cpp) against fake
// oracles whose answer is known: a graph that passes when given nodes (or any of given groups) are eager.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "graphs/search/oracle.h"
#include "graphs/search/whole_graph_oracle.h"

namespace pt2diff {
namespace {

/// Passes when every node of some group is eager; records every question.
class FakeEagerOracle : public EagerSetOracle {
 public:
  FakeEagerOracle(size_t n, std::vector<std::set<size_t>> groups) : n_(n), groups_(std::move(groups)) {}
  size_t size() const override { return n_; }
  bool passes(const std::vector<size_t>& eager) override {
    asked.push_back(eager);
    const std::set<size_t> e(eager.begin(), eager.end());
    for (const auto& g : groups_)
      if (std::includes(e.begin(), e.end(), g.begin(), g.end())) return true;
    return false;
  }
  std::vector<std::vector<size_t>> asked;

 private:
  size_t n_;
  std::vector<std::set<size_t>> groups_;
};

size_t log2_ceil(size_t n) { return n <= 1 ? 0 : static_cast<size_t>(std::ceil(std::log2(static_cast<double>(n)))); }

TEST(EagerSet, ARightCulpritCostsOneCompile) {
  for (size_t n = 1; n <= 40; ++n)
    for (size_t r = 0; r < n; ++r) {
      FakeEagerOracle oracle(n, {{r}});
      EagerSetSearch s = search_eager_set(oracle, {r}, 24, nullptr);
      ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found) << n << " " << r;
      EXPECT_EQ(s.eager, std::vector<size_t>{r});
      EXPECT_TRUE(s.minimal);
      EXPECT_EQ(s.compiles, 1u);
    }
}

TEST(EagerSet, AWrongCulpritIsDroppedAndTheNeededNodeFoundBySegments) {
  for (size_t n = 2; n <= 40; ++n)
    for (size_t r = 0; r < n; ++r) {
      const size_t culprit = (r + 1) % n;
      FakeEagerOracle oracle(n, {{r}});
      EagerSetSearch s = search_eager_set(oracle, {culprit}, 64, nullptr);
      ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
      EXPECT_EQ(s.eager, std::vector<size_t>{r}) << n << " " << r;
      EXPECT_TRUE(s.minimal);
      // the culprit, everything, then two questions per halving of the rest
      EXPECT_LE(s.compiles, 2 + 2 * log2_ceil(n)) << n << " " << r;
    }
}

TEST(EagerSet, SeveralNeededNodesAreAllFoundAndNoSetIsAskedTwice) {
  const size_t n = 64;
  const std::set<size_t> needed = {5, 6, 40, 63};
  FakeEagerOracle oracle(n, {needed});
  EagerSetSearch s = search_eager_set(oracle, {40}, 64, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_EQ(s.eager, std::vector<size_t>(needed.begin(), needed.end()));
  EXPECT_TRUE(s.minimal);
  EXPECT_LE(s.compiles, 2 + 2 * needed.size() * log2_ceil(n));
  std::set<std::vector<size_t>> distinct(oracle.asked.begin(), oracle.asked.end());
  EXPECT_EQ(distinct.size(), oracle.asked.size());
  EXPECT_EQ(oracle.asked.size(), s.compiles);
}

TEST(EagerSet, AWindowCulpritShrinksToTheNodeThatIsNeeded) {
  FakeEagerOracle oracle(20, {{9}});
  EagerSetSearch s = search_eager_set(oracle, {8, 9, 10}, 24, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_EQ(s.eager, std::vector<size_t>{9});
  EXPECT_TRUE(s.minimal);
}

TEST(EagerSet, WhenEitherOfTwoSetsWorksTheAnswerIsOneOfThemWhole) {
  FakeEagerOracle oracle(30, {{3, 4}, {20}});
  EagerSetSearch s = search_eager_set(oracle, {3}, 24, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_TRUE(s.eager == (std::vector<size_t>{3, 4}) || s.eager == std::vector<size_t>{20}) << s.eager.size();
  EXPECT_TRUE(s.minimal);
}

TEST(EagerSet, AGraphThatFailsWithEveryNodeEagerSaysSo) {
  FakeEagerOracle oracle(10, {});
  EagerSetSearch s = search_eager_set(oracle, {2}, 24, nullptr);
  EXPECT_EQ(s.conclusion, Workaround::Conclusion::EagerFails);
  EXPECT_TRUE(s.eager.empty());
  EXPECT_EQ(s.compiles, 2u);  // the culprit, then everything
}

TEST(EagerSet, NoCulpritStartsFromEverything) {
  FakeEagerOracle oracle(16, {{11}});
  EagerSetSearch s = search_eager_set(oracle, {}, 24, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_EQ(s.eager, std::vector<size_t>{11});
  EXPECT_EQ(oracle.asked.front().size(), 16u);
}

TEST(EagerSet, AnExhaustedBudgetKeepsTheSmallestPassingSetSeen) {
  FakeEagerOracle oracle(64, {{1, 17, 33, 49}});
  EagerSetSearch s = search_eager_set(oracle, {1}, 4, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_FALSE(s.minimal);
  EXPECT_EQ(s.compiles, 4u);
  EXPECT_TRUE(oracle.passes(s.eager));
  // one question is not enough to see any set pass (the culprit fails; everything is not asked)
  FakeEagerOracle none(64, {});
  EagerSetSearch t = search_eager_set(none, {1}, 1, nullptr);
  EXPECT_EQ(t.conclusion, Workaround::Conclusion::BudgetExhausted);
  EXPECT_TRUE(t.eager.empty());
}

// The workaround's oracle over the pipeline's run (a fake one here): positions map to node ids, a failed
// compile is an answer (not passing), a lost worker stops the search, a backend that cannot leave nodes eager too.
TEST(WholeGraphOracle, AsksTheRunWithNodeIdsAndReadsItsAnswers) {
  std::vector<std::vector<NodeId>> asked;
  const std::vector<NodeId> candidates = {10, 11, 12, 13};
  WholeGraphOracle oracle(
      [&](const std::vector<NodeId>& eager) {
        asked.push_back(eager);
        EagerNodesRun r;
        r.ran = true;
        const bool fixed = std::find(eager.begin(), eager.end(), 12) != eager.end();
        if (!fixed) {
          r.failing_output = "out";
          r.failing_detail = "RMSE 9x eager's";
        }
        r.worst_output = "out";
        r.worst_ratio = fixed ? 1.0 : 9.0;
        return r;
      },
      candidates);
  EXPECT_EQ(oracle.size(), 4u);
  EXPECT_FALSE(oracle.passes({0, 1}));
  EXPECT_TRUE(oracle.passes({2}));
  EXPECT_EQ(asked, (std::vector<std::vector<NodeId>>{{10, 11}, {12}}));
  const WholeGraphOracle::Answer a = oracle.ask({10});
  EXPECT_FALSE(a.passes);
  EXPECT_EQ(a.output, "out");
  EXPECT_EQ(a.detail, "RMSE 9x eager's");
  EXPECT_EQ(a.worst_ratio, 9.0);
  EXPECT_EQ(oracle.compiles(), 3u);
  // The search over it finds node 12 (position 2) from a wrong start.
  EagerSetSearch s = search_eager_set(oracle, {0}, 24, nullptr);
  ASSERT_EQ(s.conclusion, Workaround::Conclusion::Found);
  EXPECT_EQ(s.eager, std::vector<size_t>{2});
}

// An answer the run gives from an earlier compile of the same set (the node verdict's confirmation, asked
// again by the verification) is read like any other, and costs no compile.
TEST(WholeGraphOracle, AnAnswerFromAnEarlierCompileCostsNone) {
  bool reuse = false;
  WholeGraphOracle oracle(
      [&](const std::vector<NodeId>&) {
        EagerNodesRun r;
        r.ran = true;
        r.reused = reuse;
        r.worst_output = "out";
        r.worst_ratio = 0.8;
        return r;
      },
      {1, 2});
  EXPECT_TRUE(oracle.ask({1}).passes);
  EXPECT_EQ(oracle.compiles(), 1u);
  reuse = true;
  const WholeGraphOracle::Answer a = oracle.ask({1});
  EXPECT_TRUE(a.passes);
  EXPECT_EQ(a.worst_ratio, 0.8);
  EXPECT_EQ(oracle.compiles(), 1u);
}

TEST(WholeGraphOracle, ALostWorkerStopsTheSearchAndACompileErrorIsAnAnswer) {
  auto failing = [](FailureKind kind) {
    return [kind](const std::vector<NodeId>&) {
      EagerNodesRun r;
      r.failure = kind;
      r.message = "the worker said no";
      return r;
    };
  };
  WholeGraphOracle died(failing(FailureKind::WorkerDied), {1, 2});
  EXPECT_THROW(died.ask({1}), OracleLost);
  WholeGraphOracle hung(failing(FailureKind::TimedOut), {1, 2});
  EXPECT_THROW(hung.ask({1}), OracleLost);
  WholeGraphOracle unusable(failing(FailureKind::Unusable), {1, 2});
  EXPECT_THROW(unusable.ask({1}), CannotLeaveEager);
  WholeGraphOracle refused(failing(FailureKind::CompileFailed), {1, 2});
  const WholeGraphOracle::Answer a = refused.ask({1});
  EXPECT_FALSE(a.passes);
  EXPECT_EQ(a.detail, "the worker said no");
}

TEST(EagerSet, TheReportSchemaListsEveryConclusionByItsName) {
  std::ifstream in(std::string(PT2DIFF_DOCS) + "/report.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const nlohmann::json& names = schema.at("properties").at("workaround").at("oneOf").at(1).at("properties").at("conclusion").at("enum");
  for (auto c : {Workaround::Conclusion::Found, Workaround::Conclusion::NotNeeded, Workaround::Conclusion::EagerFails,
                 Workaround::Conclusion::BudgetExhausted, Workaround::Conclusion::CompilerLost,
                 Workaround::Conclusion::Unavailable})
    EXPECT_NE(std::find(names.begin(), names.end(), workaround_conclusion_name(c)), names.end()) << workaround_conclusion_name(c);
}

}  // namespace
}  // namespace pt2diff
