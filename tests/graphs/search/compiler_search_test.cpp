// tests/graphs/search/compiler_search_test.cpp — the compiler search over a fake compiler: subsystems with numbered
// decisions, one of which (or a pair of which) breaks the graph. No torch: the oracle is a function.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graphs/search/compiler_search.h"
#include "graphs/search/oracle.h"

namespace pt2diff {
namespace {

/// A compiler whose subsystems take `counts[sub]` decisions; the graph fails when every decision in `bad` is kept.
struct FakeCompiler {
  std::map<std::string, size_t> counts;
  std::vector<std::pair<std::string, size_t>> bad;
  bool any = false;  ///< fails when any decision of `bad` is kept (else: when all are)
  size_t asked = 0;

  DecisionRun operator()(const DecisionFilter& off) {
    ++asked;
    DecisionRun r;
    for (const auto& [sub, n] : counts)
      for (size_t i = 0; i < n; ++i) r.decisions.push_back({sub, i, sub + " #" + std::to_string(i), {}});
    auto kept = [&](const std::string& sub, size_t i) {
      if (off.subsystem != sub) return true;
      const bool skipped = std::find(off.skip.begin(), off.skip.end(), i) != off.skip.end() ||
                           std::find(off.skip_what.begin(), off.skip_what.end(), sub + " #" + std::to_string(i)) != off.skip_what.end();
      return !(off.limit >= 0 && static_cast<long>(i) >= off.limit) && !skipped;
    };
    bool all_kept = true, any_kept = false;
    for (const auto& [sub, i] : bad) {
      all_kept = all_kept && kept(sub, i);
      any_kept = any_kept || kept(sub, i);
    }
    r.passes = !(any ? any_kept : all_kept);
    r.detail = r.passes ? "every output passes" : "out fails";
    return r;
  }
};

TEST(CompilerSearch, NamesTheOneFusionAndVerifiesItInLogCompiles) {
  for (size_t n : {1, 2, 7, 64, 100})
    for (size_t k = 0; k < n; k += std::max<size_t>(1, n / 5)) {
      FakeCompiler fake{{{"post_grad_passes", 16}, {"fusions", n}, {"lowerings", 9}}, {{"fusions", k}}};
      const CompilerSearch s = search_compiler(std::ref(fake), 40);
      ASSERT_EQ(s.conclusion, CompilerSearch::Conclusion::Found) << n << " " << k;
      ASSERT_EQ(s.decision->subsystem, "fusions");
      EXPECT_EQ(s.decision->index, k) << n;
      EXPECT_TRUE(s.verified);
      // The recording, post-grad all off, fusions all off, the bisection, the verification.
      EXPECT_LE(s.compiles, 4 + static_cast<size_t>(std::ceil(std::log2(std::max<size_t>(n, 1))))) << n;
      EXPECT_EQ(s.compiles, fake.asked);
      EXPECT_FALSE(s.steps.front().passes);
      EXPECT_TRUE(s.steps.back().passes);
    }
}

TEST(CompilerSearch, TwoDecisionsEachBreakingItAreNamedButNotVerified) {
  // Needed together: keeping 0..7 is the first that fails, and 7 alone off passes.
  FakeCompiler together{{{"post_grad_passes", 10}}, {{"post_grad_passes", 3}, {"post_grad_passes", 7}}};
  const CompilerSearch t = search_compiler(std::ref(together), 40);
  ASSERT_EQ(t.conclusion, CompilerSearch::Conclusion::Found);
  EXPECT_EQ(t.decision->index, 7u);
  EXPECT_TRUE(t.verified);
  // Either breaks it: the first is named, and with it alone off the other still breaks the graph: said, not verified.
  FakeCompiler either{{{"post_grad_passes", 10}}, {{"post_grad_passes", 3}, {"post_grad_passes", 7}}, true};
  const CompilerSearch e = search_compiler(std::ref(either), 40);
  ASSERT_EQ(e.conclusion, CompilerSearch::Conclusion::Found);
  EXPECT_EQ(e.decision->index, 3u);
  EXPECT_FALSE(e.verified);
  EXPECT_NE(e.verification.find("still fails"), std::string::npos) << e.verification;
}

TEST(CompilerSearch, EveryWayOfNamingNoneHasItsConclusion) {
  // The graph passes as compiled (not reproduced).
  struct Always {
    DecisionRun operator()(const DecisionFilter&) { return {true, "every output passes", {{"fusions", 0, "f", {}}}, 0}; }
  };
  EXPECT_EQ(search_compiler(Always{}, 40).conclusion, CompilerSearch::Conclusion::NotReproduced);
  struct Never {
    DecisionRun operator()(const DecisionFilter&) { return {false, "out fails", {{"fusions", 0, "f", {}}, {"lowerings", 0, "l", {}}}, 0}; }
  };
  const CompilerSearch none = search_compiler(Never{}, 40);
  EXPECT_EQ(none.conclusion, CompilerSearch::Conclusion::NoSubsystem);
  EXPECT_EQ(none.compiles, 3u);  // recorded, fusions off, lowerings off
  FakeCompiler big{{{"fusions", 1000}}, {{"fusions", 517}}};
  EXPECT_EQ(search_compiler(std::ref(big), 5).conclusion, CompilerSearch::Conclusion::BudgetExhausted);
  struct Lost {
    DecisionRun operator()(const DecisionFilter&) { throw OracleLost("the worker died"); }
  };
  EXPECT_EQ(search_compiler(Lost{}, 40).conclusion, CompilerSearch::Conclusion::CompilerLost);
  EXPECT_STREQ(compiler_search_conclusion_name(CompilerSearch::Conclusion::NoSubsystem), "no_subsystem");
}

}  // namespace
}  // namespace pt2diff
