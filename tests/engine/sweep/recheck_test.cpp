// tests/engine/sweep/recheck_test.cpp — recheck's pieces that need no second torch (pt2diff/recheck.h): the bisection
// over ordered versions with a fake oracle, the nodes whose compiled local error changed between two results, --torch's
// forms, the supported versions, and the probe of a Python that is no torch. The real torches: recheck_torches.py.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "pt2diff/error.h"
#include "pt2diff/recheck.h"

namespace pt2diff {
namespace {

TEST(BisectFirstBad, FindsEveryBoundaryAskingEachVersionOnceInLogarithmicRuns) {
  for (size_t n = 2; n <= 17; ++n)
    for (size_t first_bad = 1; first_bad < n; ++first_bad) {
      std::multiset<size_t> asked;
      auto oracle = [&](size_t i) -> std::optional<bool> {
        asked.insert(i);
        return i >= first_bad;
      };
      std::string why = "unset";
      const std::optional<size_t> got = bisect_first_bad(n, oracle, &why);
      ASSERT_TRUE(got) << n << " " << first_bad << " " << why;
      EXPECT_EQ(*got, first_bad) << "n=" << n;
      EXPECT_TRUE(why.empty());
      for (size_t i : asked) EXPECT_EQ(asked.count(i), 1u) << "version " << i << " asked twice, n=" << n;
      EXPECT_LE(asked.size(), 2 + static_cast<size_t>(std::ceil(std::log2(static_cast<double>(n - 1))))) << "n=" << n;
    }
}

TEST(BisectFirstBad, SaysWhyWhenTheEndsDoNotBracketABoundary) {
  std::string why;
  EXPECT_FALSE(bisect_first_bad(4, [](size_t) { return true; }, &why));
  EXPECT_NE(why.find("first torch is already bad"), std::string::npos) << why;
  EXPECT_FALSE(bisect_first_bad(4, [](size_t) { return false; }, &why));
  EXPECT_NE(why.find("last torch is good"), std::string::npos) << why;
  EXPECT_FALSE(bisect_first_bad(1, [](size_t) { return false; }, &why));
  EXPECT_NE(why.find("at least two"), std::string::npos) << why;
  // A version in the middle that cannot be judged: the answer is a range, not a guess.
  auto oracle = [](size_t i) -> std::optional<bool> {
    if (i == 4) return std::nullopt;
    return i >= 6;
  };
  EXPECT_FALSE(bisect_first_bad(9, oracle, &why));
  EXPECT_NE(why.find("could not be judged"), std::string::npos) << why;
  EXPECT_FALSE(bisect_first_bad(3, [](size_t i) -> std::optional<bool> { return i == 0 ? std::nullopt : std::optional<bool>(true); }, &why));
  EXPECT_NE(why.find("first torch could not be judged"), std::string::npos) << why;
}

NodeError node(const std::string& name, double eager, double compiled) {
  NodeError n;
  n.name = name;
  n.target = "aten." + name + ".default";
  n.source = "model.py:1 in forward";
  n.local_relative = eager;
  n.compiled_local_relative = compiled;
  return n;
}

TEST(ChangedNodes, AboveEagersLocalErrorByTheFactorInGraphOrder) {
  DiffResult good, bad;
  good.nodes = {node("same", 1e-7, 1.2e-7), node("grew", 1e-7, 1e-7), node("noise", 1e-7, 1e-9), node("none", 1e-7, -1),
                node("shrank", 1e-6, 1e-2), node("gone", 1e-7, 1e-7)};
  bad.nodes = {node("same", 1e-7, 1.5e-7), node("grew", 1e-7, 1e-5), node("noise", 1e-7, 9e-8), node("none", 1e-7, 1e-3),
               node("shrank", 1e-6, 1e-6), node("new", 1e-7, 1.0)};
  const std::vector<NodeChange> changed = changed_nodes(good, bad, 2);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].node, "grew");
  EXPECT_DOUBLE_EQ(changed[0].before, 1e-7);
  EXPECT_DOUBLE_EQ(changed[0].after, 1e-5);
  EXPECT_NEAR(changed[0].factor, 100, 1e-9);
  EXPECT_EQ(changed[0].op, "aten.grew.default");
  EXPECT_EQ(changed[1].node, "shrank");  // a fix shows as a change too: factor below 1
  EXPECT_NEAR(changed[1].factor, 1e-4, 1e-12);
  // "noise" grew 90x, but from far below eager's own local error to just under it: rounding either way, not a change,
  // at any factor; "same" (1.25x) joins at a smaller one.
  EXPECT_EQ(changed_nodes(good, bad, 1.2).size(), 3u);
  EXPECT_EQ(changed_nodes(good, bad, 1.2)[0].node, "same");
}

TEST(ParseTorchInstall, LabelOrPythonAlone) {
  TorchInstall t = parse_torch_install("nightly=/opt/nightly/bin/python");
  EXPECT_EQ(t.label, "nightly");
  EXPECT_EQ(t.python, "/opt/nightly/bin/python");
  t = parse_torch_install("/venvs/t214/bin/python");
  EXPECT_EQ(t.label, "");
  EXPECT_EQ(t.python, "/venvs/t214/bin/python");
  for (const char* bad : {"", "label="}) {
    try {
      parse_torch_install(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Usage);
      EXPECT_NE(std::string(e.what()).find("LABEL=PYTHON"), std::string::npos) << e.what();
    }
  }
}

TEST(TorchVersionSupported, TwoElevenToTwoFourteen) {
  for (const char* yes : {"2.11.0", "2.12.1", "2.13.0+cpu", "2.14.1+cu130", "2.12.0.dev20260101+cpu"}) EXPECT_TRUE(torch_version_supported(yes)) << yes;
  for (const char* no : {"2.10.0", "2.15.0", "2.9.1", "3.0.0", "1.13.1", "nightly", ""}) EXPECT_FALSE(torch_version_supported(no)) << no;
}

TEST(ProbeTorch, APythonThatIsNotThereOrPrintsNothingIsOneLine) {
  TorchProbe p = probe_torch("/nonexistent/bin/python", 30);
  EXPECT_TRUE(p.version.empty());
  EXPECT_NE(p.problem.find("/nonexistent/bin/python"), std::string::npos) << p.problem;
  EXPECT_EQ(p.problem.find('\n'), std::string::npos) << p.problem;
  p = probe_torch("/bin/false", 30);
  EXPECT_TRUE(p.version.empty());
  EXPECT_NE(p.problem.find("did not run (exited with status 1)"), std::string::npos) << p.problem;
}

}  // namespace
}  // namespace pt2diff
