// The wording unit (graphs/wording/wording.h): the text and HTML reports render a sentence from the same words, and
// the run's verdict has one set of words.
#include "graphs/wording/wording.h"

#include <gtest/gtest.h>

namespace pt2diff {
namespace {

Verdict suspicious_verdict() {
  Verdict v;
  v.pass = true;
  v.level = Level::Suspicious;
  v.reason = "allclose";
  v.error_ratio = 1262.4;
  v.rmse_result = 4.44e-05;
  v.rmse_eager = 3.52e-08;
  return v;
}

TEST(Wording, TextAndHtmlSayTheSameWords) {
  ToleranceRule rule;
  rule.suspicious_ratio = 100;
  const wording::Sentence s = wording::suspicious(suspicious_verdict(), rule);
  EXPECT_EQ(
      s.text(),
      "the rule passes (allclose), but compiled is 1262x farther from fp64 than eager (RMSE 4.44e-05 vs 3.52e-08; "
      "--suspicious-ratio 100)");
  EXPECT_EQ(s.html(),
            "the rule passes (allclose), but compiled is 1262&times; farther from fp64 than eager (RMSE 4.44e-05 vs "
            "3.52e-08; <code>--suspicious-ratio 100</code>)");
}

TEST(Wording, HtmlIsEscapedAndRatiosKeepTheirForm) {
  const wording::Sentence s =
      wording::Sentence().words("a < b & 'c' ").code("--x \"y\"").words(" ").ratio(12.345).words(" ").ratio(1.0 / 0.0);
  EXPECT_EQ(s.text(), "a < b & 'c' --x \"y\" 12.3x inf");
  EXPECT_EQ(s.html(), "a &lt; b &amp; &#39;c&#39; <code>--x &quot;y&quot;</code> 12.3&times; inf");
  EXPECT_EQ(wording::ratio(150.4), "150x");
  EXPECT_EQ(wording::listed({"a", "b", "c", "d", "e", "f", "g"}), "a, b, c, d, e, ... (7 in all)");
}

TEST(Wording, TheVerdictsWords) {
  DiffResult r;
  EXPECT_EQ(wording::verdict(r).text(), "AGREE");
  r.node_verdict.level = Level::Suspicious;
  EXPECT_EQ(wording::verdict(r).text(), "SUSPICIOUS (a node stands out; the outputs pass)");
  r.node_verdict.level = Level::Fail;
  EXPECT_EQ(wording::verdict(r).text(), "DIVERGED (at a node; the outputs pass)");
  r.compiled_failed = true;  // a compile other than the graph's (the exploded one)
  EXPECT_EQ(wording::verdict(r).text(), "DIVERGED (at a node; the outputs pass; a compile failed: see compiles)");
  r.compiles.push_back(CompileRecord{});
  r.compiles.back().what = "graph";
  r.compiles.back().ok = false;
  EXPECT_EQ(wording::verdict(r).text(), "COMPILER FAILED");
  EXPECT_EQ(wording::verdict(r).word, "COMPILER FAILED");
}

TEST(Wording, AConfirmationSaysWhatItsConclusionMeans) {
  NodeConfirmation c;
  c.eager = {"mm_3"};
  c.output = "out";
  c.before = 4.2;
  c.after = 0.9;
  c.conclusion = "confirmed";
  EXPECT_EQ(wording::confirmation_summary(c, "out", 0.9),
            "with mm_3 eager, the outputs' error goes back to eager's: out from 4.2x to 0.9x eager's RMSE to fp64");
  c.conclusion = "not_confirmed";
  c.after = 3.8;
  EXPECT_EQ(wording::confirmation_summary(c, "other", 7.5),
            "with mm_3 eager, the outputs stay off eager's error (out at 3.8x, was 4.2x; worst other at 7.5x): "
            "something else moves them too");
  c.compiles = 1;
  c.seconds = 2.5;
  c.summary = "s";
  EXPECT_EQ(wording::confirmation(c).text(), "confirmation (not_confirmed, 1 compile, 2.50 s): s");
  EXPECT_EQ(wording::confirmation(c).html(), "confirmation (<code>not_confirmed</code>, 1 compile, 2.50 s): s");
}

TEST(Wording, ACulpritIsSaidFromItsFacts) {
  Culprit c;
  c.conclusion = Culprit::Conclusion::Named;
  c.kind = Culprit::Kind::SingleOp;
  c.nodes = {"addmm_1"};
  c.ops = {"aten.addmm.default"};
  c.verdict.level = Level::Suspicious;
  c.verdict.detail = "allclose to eager at atol=rtol=0.001";
  c.verdict.error_ratio = 1740.2;
  EXPECT_EQ(wording::culprit_summary(c, 8),
            "addmm_1 (aten.addmm.default) diverges on its own: fed with fp64-exact inputs, its compiled result is "
            "suspicious: it "
            "passes the rule (allclose to eager at atol=rtol=0.001) but is 1740x farther from fp64 than eager");
  c.conclusion = Culprit::Conclusion::BudgetExhaustedLate;
  EXPECT_EQ(wording::culprit_summary(c, 8),
            "the budget of 8 compiles ran out in phase 2; divergence first shows at addmm_1");
  c.conclusion = Culprit::Conclusion::CompilerLost;
  EXPECT_EQ(wording::culprit_summary(c, 8, "the worker died"), "localization stopped: the worker died");
}

}  // namespace
}  // namespace pt2diff
