// tests/graphs/search/localizer_test.cpp — the search against a fake oracle with a known culprit:
// every position and window is found, within the compile budget; flaky answers and an exhausted
// budget are reported as such.
#include <gtest/gtest.h>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "graphs/search/oracle.h"

namespace pt2diff {
namespace {

/// Positions [a, b] (inclusive) diverge together: a prefix fails once it holds b; a window fails
/// when it holds all of [a, b]. Every distinct region asked counts as one compile.
class FakeOracle : public RegionOracle {
 public:
  FakeOracle(size_t m, size_t a, size_t b) : m_(m), a_(a), b_(b) {}
  size_t size() const override { return m_; }
  std::string describe(size_t begin, size_t end) const override { return fmt::format("c{}..c{}", begin + 1, end); }
  ProbeAnswer prefix(size_t end) override { return answer({0, end}, flip(end > b_, end)); }
  ProbeAnswer window(size_t begin, size_t end) override { return answer({begin + 1000000, end}, begin <= a_ && end > b_); }
  size_t position_of(const std::string&) const override { return m_; }
  void name_nodes(size_t begin, size_t end, Culprit& c) const override {
    for (size_t i = begin; i < end; ++i) {
      c.nodes.push_back(fmt::format("n{}", i));
      c.ops.push_back("aten.mm.default");
      c.sources.push_back("");
      c.module_paths.push_back("");
    }
  }
  size_t compiles() const override { return asked_.size(); }
  bool flaky = false;

 private:
  /// Flaky: asked again, a prefix gives the other answer (a nondeterministic compiler).
  bool flip(bool v, size_t end) { return flaky && times_[end]++ > 0 ? !v : v; }
  ProbeAnswer answer(std::pair<size_t, size_t> key, bool fails) {
    ProbeAnswer a;
    a.compiled = asked_.insert(key).second;
    a.fails = fails;
    a.value = "v";
    a.verdict.pass = !fails;
    a.verdict.reason = fails ? "rmse_exceeds_bound" : "allclose";
    return a;
  }
  size_t m_, a_, b_;
  std::map<size_t, int> times_;
  std::set<std::pair<size_t, size_t>> asked_;
};

Localization run(FakeOracle& oracle, LocalizeOptions options = {}, std::vector<size_t> suspects = {}) {
  return localize(oracle, options, suspects, nullptr);
}

TEST(Localizer, FindsEverySingleOpWithinTheBudget) {
  for (size_t m : {1, 2, 3, 7, 64, 100, 1000}) {
    for (size_t culprit = 0; culprit < m; culprit += std::max<size_t>(1, m / 37)) {
      FakeOracle oracle(m, culprit, culprit);
      Localization l = run(oracle);
      ASSERT_EQ(l.culprit.kind, Culprit::Kind::SingleOp) << "m=" << m << " culprit=" << culprit << ": " << l.culprit.summary;
      ASSERT_EQ(l.culprit.conclusion, Culprit::Conclusion::Named);
      EXPECT_EQ(l.culprit.nodes, std::vector<std::string>{fmt::format("n{}", culprit)});
      EXPECT_LE(l.compiles, l.budget) << "m=" << m << " culprit=" << culprit;
      EXPECT_EQ(l.budget, 2 * static_cast<size_t>(std::ceil(std::log2(m))) + 4);
    }
  }
}

TEST(Localizer, FindsTheSmallestWindowThatFailsOnlyTogether) {
  for (auto [m, a, b] : std::vector<std::tuple<size_t, size_t, size_t>>{{10, 3, 5}, {100, 0, 99}, {100, 40, 41}, {1000, 500, 700}}) {
    FakeOracle oracle(m, a, b);
    Localization l = run(oracle);
    ASSERT_EQ(l.culprit.kind, Culprit::Kind::Window) << l.culprit.summary;
    ASSERT_EQ(l.culprit.conclusion, Culprit::Conclusion::Named);
    EXPECT_EQ(l.culprit.nodes.front(), fmt::format("n{}", a));
    EXPECT_EQ(l.culprit.nodes.back(), fmt::format("n{}", b));
    EXPECT_LE(l.compiles, l.budget);
  }
}

TEST(Localizer, AnExplodedSuspectThatIsRightSettlesPhaseOneInTwoProbes) {
  FakeOracle with(1000, 613, 613), without(1000, 613, 613);
  Localization guided = run(with, {}, {613, 900});
  Localization blind = run(without);
  EXPECT_EQ(guided.culprit.nodes, std::vector<std::string>{"n613"});
  EXPECT_TRUE(guided.exploded_agrees);
  EXPECT_LT(guided.compiles, blind.compiles);
  EXPECT_LE(guided.compiles, 4u);
  // A wrong suspect costs two probes, never a wrong answer.
  FakeOracle misled(1000, 613, 613);
  Localization wrong = run(misled, {}, {17});
  EXPECT_EQ(wrong.culprit.nodes, std::vector<std::string>{"n613"});
  EXPECT_FALSE(wrong.exploded_agrees);
}

TEST(Localizer, LinearSearchFindsTheSameCulprit) {
  FakeOracle oracle(30, 12, 12);
  LocalizeOptions o;
  o.search = LocalizeOptions::Search::Linear;
  Localization l = run(oracle, o);
  EXPECT_EQ(l.culprit.nodes, std::vector<std::string>{"n12"});
}

TEST(Localizer, FlakyAnswersNameNoCulprit) {
  FakeOracle oracle(100, 50, 50);
  oracle.flaky = true;
  LocalizeOptions o;
  o.repeats = 3;
  Localization l = run(oracle, o);
  EXPECT_EQ(l.culprit.kind, Culprit::Kind::Flaky) << l.culprit.summary;
  EXPECT_EQ(l.culprit.conclusion, Culprit::Conclusion::FlakyBoundary);
  EXPECT_NE(l.culprit.summary.find("flaky: re-running the probes around n50"), std::string::npos) << l.culprit.summary;
}

TEST(Localizer, AnExhaustedBudgetIsInconclusive) {
  FakeOracle oracle(1000, 300, 300);
  LocalizeOptions o;
  o.max_compiles = 4;
  Localization l = run(oracle, o);
  EXPECT_EQ(l.culprit.kind, Culprit::Kind::Inconclusive);
  EXPECT_NE(l.culprit.summary.find("budget of 4 compiles ran out"), std::string::npos) << l.culprit.summary;
  EXPECT_EQ(l.culprit.conclusion, Culprit::Conclusion::BudgetExhausted);
  EXPECT_LE(l.compiles, 5u);
}

TEST(Localizer, EveryWayOfNamingNoCulpritHasItsOwnConclusion) {
  // Nothing fails on its own: only the whole graph compiled together diverges.
  FakeOracle none(50, 50, 50);
  Localization l = run(none);
  EXPECT_EQ(l.culprit.kind, Culprit::Kind::Inconclusive);
  EXPECT_EQ(l.culprit.conclusion, Culprit::Conclusion::NoPrefixDiverges) << l.culprit.summary;

  // Prefixes fail from n20 on, but no window fails from fp64-exact inputs: accumulated upstream.
  struct NoWindowFails : FakeOracle {
    using FakeOracle::FakeOracle;
    ProbeAnswer window(size_t, size_t) override {
      ProbeAnswer a;
      a.compiled = true;
      a.value = "v";
      a.verdict.pass = true;
      return a;
    }
  } upstream(50, 20, 20);
  l = run(upstream);
  EXPECT_EQ(l.culprit.conclusion, Culprit::Conclusion::AccumulatedUpstream) << l.culprit.summary;
  EXPECT_EQ(l.culprit.nodes, std::vector<std::string>{"n20"});

  // The compiler dies mid-search.
  struct Dies : FakeOracle {
    using FakeOracle::FakeOracle;
    ProbeAnswer prefix(size_t) override { throw OracleLost("the inductor worker died while compiling"); }
  } dies(50, 20, 20);
  l = run(dies);
  EXPECT_EQ(l.culprit.conclusion, Culprit::Conclusion::CompilerLost) << l.culprit.summary;
  EXPECT_NE(l.culprit.summary.find("localization stopped: the inductor worker died"), std::string::npos) << l.culprit.summary;
}

TEST(Localizer, TheReportSchemaListsEveryConclusionByItsName) {
  std::ifstream f(std::string(PT2DIFF_DOCS) + "/report.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(f);
  const auto& listed = schema["properties"]["localization"]["oneOf"][1]["properties"]["culprit"]["properties"]["conclusion"]["enum"];
  std::vector<std::string> names;
  for (int c = 0; c <= static_cast<int>(Culprit::Conclusion::CompilerDecision); ++c)
    names.emplace_back(culprit_conclusion_name(static_cast<Culprit::Conclusion>(c)));
  EXPECT_EQ(listed.get<std::vector<std::string>>(), names);
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

// The op inside a fused kernel (kernel_search.cpp): positions are the kernel's nodes, the failing one last.
TEST(KernelSearch, FindsTheOpWithinOnePlusLog2Compiles) {
  for (size_t n : {1, 2, 3, 4, 7, 8, 9, 31}) {
    for (size_t bug = 0; bug < n; ++bug) {
      FakeOracle oracle(n, bug, bug);  // a region of the first e nodes fails once it holds `bug`
      KernelCulprit k = search_kernel(oracle, "cpp_fused_0", [](size_t) { return std::optional<bool>(true); }, nullptr);
      ASSERT_EQ(k.kind, "single_op") << "n=" << n << " bug=" << bug << ": " << k.summary;
      EXPECT_EQ(k.op, fmt::format("n{}", bug));
      EXPECT_EQ(k.nodes.size(), n);
      EXPECT_EQ(k.bound, 1 + static_cast<size_t>(std::ceil(std::log2(n))));
      EXPECT_LE(k.compiles, k.bound) << "n=" << n << " bug=" << bug;
      EXPECT_NE(k.summary.find("kernel cpp_fused_0 (nodes n0"), std::string::npos) << k.summary;
      EXPECT_NE(k.summary.find(fmt::format("op n{} (aten.mm.default) diverges", bug)), std::string::npos) << k.summary;
    }
  }
}

TEST(KernelSearch, AnOpThatPassesAloneDivergesOnlyFused) {
  FakeOracle oracle(6, 3, 3);
  KernelCulprit k = search_kernel(oracle, "cpp_fused_1", [](size_t) { return std::optional<bool>(false); }, nullptr);
  ASSERT_EQ(k.kind, "fused") << k.summary;
  EXPECT_EQ(k.op, "n3");
  EXPECT_EQ(k.fused_with, (std::vector<std::string>{"n0", "n1", "n2"}));
  EXPECT_NE(k.summary.find("n3 (aten.mm.default) diverges only when fused with n0, n1, n2"), std::string::npos) << k.summary;
  EXPECT_LE(k.compiles, k.bound);
}

TEST(KernelSearch, WithoutTheExplodedCompileTheOpAloneCostsOneMoreCompile) {
  FakeOracle oracle(8, 5, 5);  // window [5, 6) holds the bug alone: it fails
  KernelCulprit k = search_kernel(oracle, "k", [](size_t) { return std::optional<bool>(); }, nullptr);
  ASSERT_EQ(k.kind, "single_op") << k.summary;
  EXPECT_EQ(k.op, "n5");
  EXPECT_EQ(k.bound, 1 + 3 + 1u);
  EXPECT_LE(k.compiles, k.bound);
}

TEST(KernelSearch, KernelNodesThatPassFromExactInputsAreInconclusive) {
  FakeOracle oracle(4, 9, 9);  // the bug is past the kernel's nodes: nothing here fails
  KernelCulprit k = search_kernel(oracle, "k", [](size_t) { return std::optional<bool>(true); }, nullptr);
  EXPECT_EQ(k.kind, "inconclusive");
  EXPECT_TRUE(k.op.empty());
  EXPECT_EQ(k.compiles, 1u);
  EXPECT_NE(k.summary.find("takes its error from upstream"), std::string::npos) << k.summary;
}

}  // namespace
}  // namespace pt2diff
