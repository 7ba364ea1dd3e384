// tests/engine/localize/workaround_test.cpp — the smallest eager set (--workaround) through the whole
// pipeline, with the fault backend as the compiler: a node left eager runs without its planted fault, so
// the set to find is known. The real Inductor case is tests/engine/localize/workaround.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../test_support.h"
#include "pt2diff/diff.h"
#include "pt2diff/html.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

using testing::fixture;

DiffResult run_workaround(const std::string& name, const std::string& compiled, bool localize = true) {
  Program p = load_program(fixture(name + ".pt2"));
  DiffOptions o;
  o.compiled = compiled;
  o.workaround.enabled = true;
  o.localize.enabled = localize;
  return diff(p, bind_inputs(p, load_inputs(fixture(name + "_inputs.pt"))), o);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(Workaround, TheCulpritLeftEagerIsVerifiedByItsOwnCompile) {
  DiffResult r = run_workaround("mlp", "fault:relu:scale=0.05");
  ASSERT_TRUE(r.diverged);
  ASSERT_TRUE(r.workaround);
  const Workaround& w = *r.workaround;
  EXPECT_EQ(w.conclusion, Workaround::Conclusion::Found) << w.summary;
  ASSERT_EQ(w.nodes.size(), 1u);
  EXPECT_EQ(w.nodes[0].node, "relu");
  EXPECT_EQ(w.nodes[0].op, "aten.relu.default");
  EXPECT_TRUE(w.minimal);
  EXPECT_TRUE(w.verified) << w.verification;
  // The culprit eager (passes); the lever (relu's source line) leaves eager that same set, so the verification
  // is that compile's answer, not a second compile of the same graph.
  EXPECT_EQ(w.compiles, 1u);
  EXPECT_EQ(w.candidates, 3u);
  // relu is called in the root module's forward: the lever is its source line.
  ASSERT_EQ(w.levers.size(), 1u);
  EXPECT_EQ(w.levers[0].kind, EagerLever::Kind::SourceLine);
  EXPECT_NE(w.levers[0].source.find("make_fixtures.py:"), std::string::npos) << w.levers[0].source;
  EXPECT_NE(joined(w.lines).find("@torch.compiler.disable"), std::string::npos) << joined(w.lines);
  EXPECT_EQ(w.verified_nodes, 1u);
  // The run's verdict is the compiled graph's, whatever the workaround found.
  EXPECT_TRUE(counts_as_failing(r));
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["workaround"]["conclusion"], "found");
  EXPECT_EQ(j["workaround"]["nodes"][0]["node"], "relu");
  EXPECT_NE(to_text(r).find("workaround (the smallest eager set, "), std::string::npos);
  EXPECT_NE(to_summary(r).find("workaround: leave 1 of 3 nodes eager (relu)"), std::string::npos) << to_summary(r);
  EXPECT_NE(to_html(r, HtmlOptions{}).find("Workaround: the smallest eager set"), std::string::npos);
}

TEST(Workaround, ANodeInsideAModuleIsLeftEagerByDisablingThatModule) {
  DiffResult r = run_workaround("attention", "fault:aten.linear#1:scale=0.05");  // the qkv projection
  ASSERT_TRUE(r.diverged);
  ASSERT_TRUE(r.workaround);
  const Workaround& w = *r.workaround;
  ASSERT_EQ(w.conclusion, Workaround::Conclusion::Found) << w.summary;
  ASSERT_EQ(w.nodes.size(), 1u);
  EXPECT_EQ(w.nodes[0].module_path, "qkv");
  ASSERT_EQ(w.levers.size(), 1u);
  EXPECT_EQ(w.levers[0].kind, EagerLever::Kind::Module);
  EXPECT_EQ(w.levers[0].module_path, "qkv");
  EXPECT_EQ(w.levers[0].module_type, "Linear");
  EXPECT_TRUE(w.verified) << w.verification;
  const std::string lines = joined(w.lines);
  EXPECT_NE(lines.find("m = model.get_submodule(\"qkv\")"), std::string::npos) << lines;
  EXPECT_NE(lines.find("m.forward = torch.compiler.disable(m.forward)"), std::string::npos) << lines;
}

TEST(Workaround, WithoutACulpritTheSearchSplitsTheWholeGraph) {
  DiffResult r = run_workaround("attention", "fault:aten.linear#2:scale=0.05", /*localize=*/false);  // the output projection
  ASSERT_TRUE(r.diverged);
  ASSERT_FALSE(r.localization);
  ASSERT_TRUE(r.workaround);
  const Workaround& w = *r.workaround;
  ASSERT_EQ(w.conclusion, Workaround::Conclusion::Found) << w.summary;
  ASSERT_EQ(w.nodes.size(), 1u);
  EXPECT_EQ(w.nodes[0].module_path, "proj");
  EXPECT_TRUE(w.minimal);
  EXPECT_TRUE(w.verified);
  // everything eager, then two questions per halving of 15 nodes, then the verification
  EXPECT_LE(w.compiles, 1 + 2 * 4 + 1u);
}

TEST(Workaround, AGraphThatPassesNeedsNoneAndCostsNoCompile) {
  DiffResult r = run_workaround("mlp", "eager");
  ASSERT_FALSE(r.diverged);
  ASSERT_TRUE(r.workaround);
  EXPECT_EQ(r.workaround->conclusion, Workaround::Conclusion::NotNeeded);
  EXPECT_EQ(r.workaround->compiles, 0u);
  EXPECT_EQ(to_summary(r).find("workaround"), std::string::npos);
}

TEST(Workaround, IsOffByDefault) {
  Program p = load_program(fixture("mlp.pt2"));
  DiffOptions o;
  o.compiled = "fault:relu:scale=0.05";
  DiffResult r = diff(p, bind_inputs(p, load_inputs(fixture("mlp_inputs.pt"))), o);
  EXPECT_TRUE(r.diverged);
  EXPECT_FALSE(r.workaround);
  EXPECT_TRUE(nlohmann::json::parse(to_json(r))["workaround"].is_null());
}

}  // namespace
}  // namespace pt2diff
