// The verdict rules' table (graphs/rules/rule_registry.h), without torch: each rule reads back what it
// writes, judges from the evidence judge() hands it, and the report schema's reasons are the table's.
// judge() with real tensors, against torch's own allclose and the fp64 values, is compare_test.cpp's
// and verdict_levels_test.cpp's (engine_tests).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "graphs/rules/rule_registry.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

/// One spec per rule, as a user writes it: a new row of the table without one here fails the first test.
const std::vector<std::string> kSpecs = {"same", "allclose", "ulp:4", "cosine:0.95", "relative"};

TEST(RuleRegistry, EveryRuleReadsBackWhatItWrites) {
  std::set<ToleranceRule::Kind> covered;
  for (const std::string& spec : kSpecs) {
    const ToleranceRule r = parse_rule(spec);
    covered.insert(r.kind);
    EXPECT_EQ(rule_name(r), spec);
    EXPECT_EQ(rule_name(parse_rule(rule_name(r))), spec);
    EXPECT_EQ(std::string(rule_kind(r.kind).name), spec.substr(0, spec.find(':')));
  }
  EXPECT_EQ(covered.size(), rule_kinds().size()) << "a rule of the table has no spec in kSpecs";
  // Arguments: defaults where a rule has one, checked where it has none.
  EXPECT_EQ(parse_rule("same:").kind, ToleranceRule::Kind::Same);
  try {
    parse_rule("same:1");
    FAIL() << "same takes no argument";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown --rule 'same:1' (same, allclose, ulp:N, cosine[:C], relative)");
  }
  try {
    parse_rule("ulp");
    FAIL() << "ulp needs its bound";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--rule ulp:N needs the largest ULP distance allowed (ulp:4)");
  }
  try {
    parse_rule("cosine:x");
    FAIL() << "cosine's argument is a number";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--rule cosine:x: 'x' is not a number");
  }
  // read_rule keeps what is not the kind's own.
  ToleranceRule r;
  r.tol = 0.25;
  read_rule("ulp:2", r);
  EXPECT_EQ(r.kind, ToleranceRule::Kind::Ulp);
  EXPECT_DOUBLE_EQ(r.max_ulp, 2);
  EXPECT_DOUBLE_EQ(r.tol, 0.25);
}

TEST(RuleRegistry, TheReportSchemaListsEveryReasonOfTheTable) {
  std::ifstream f(std::string(PT2DIFF_DOCS) + "/report.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(f);
  std::set<std::string> reasons(general_verdict_reasons().begin(), general_verdict_reasons().end());
  for (const RuleKind* k : rule_kinds()) reasons.insert(k->reasons.begin(), k->reasons.end());
  EXPECT_EQ(schema["properties"]["outputs"]["items"]["properties"]["reason"]["enum"].get<std::set<std::string>>(), reasons);
}

/// Evidence of a value whose result and eager errors to fp64 are `result` and `eager`.
struct Fake {
  Metrics result, eager;
  bool close_to_eager = false, close_to_fp64 = false;
  RuleEvidence evidence(const std::string& dtype = "float32", long long numel = 4096) {
    RuleEvidence e;
    e.result = &result;
    e.eager = &eager;
    e.dtype = dtype;
    e.low_precision = dtype == "bfloat16" || dtype == "float16";
    e.numel = numel;
    e.allclose_to_eager = [this](double, bool) { return close_to_eager; };
    e.allclose_to_fp64 = [this](double, bool) { return close_to_fp64; };
    return e;
  }
};

Verdict judge_with(const std::string& spec, Fake& f, const std::string& dtype = "float32", long long numel = 4096) {
  const ToleranceRule rule = parse_rule(spec);
  return rule_kind(rule.kind).judge(f.evidence(dtype, numel), rule);
}

TEST(RuleRegistry, EachRuleJudgesFromTheEvidence) {
  Fake f;
  f.result.rmse = 3e-3;
  f.eager.rmse = 1e-3;
  f.result.ref_rms = f.eager.ref_rms = 1;
  f.result.max_ulp = 3;
  f.result.cosine = 0.98;
  f.result.max_abs = 0.01;
  f.eager.max_abs = 0.004;
  // same(): allclose to eager passes at once; else RMSE against multiplier x eager's + tol/10.
  f.close_to_eager = true;
  EXPECT_EQ(judge_with("same", f).reason, "allclose");
  f.close_to_eager = false;
  Verdict v = judge_with("same", f);  // fp32, 4096 elements: multiplier 2, bound 2e-3 + 1e-4 < 3e-3
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "rmse_exceeds_bound");
  EXPECT_DOUBLE_EQ(v.bound, 2 * 1e-3 + 1e-4);
  v = judge_with("same", f, "bfloat16");  // low precision: multiplier 3, bound 3.1e-3
  EXPECT_TRUE(v.pass);
  EXPECT_DOUBLE_EQ(v.multiplier, 3);
  // No fp64: same() fails loudly after its eager step.
  RuleEvidence none = f.evidence();
  none.result = none.eager = nullptr;
  EXPECT_EQ(rule_kind(ToleranceRule::Kind::Same).judge(none, ToleranceRule{}).reason, "fp64_unavailable");
  EXPECT_TRUE(rule_kind(ToleranceRule::Kind::Same).judges_without_fp64);
  // The fp64-only rules.
  EXPECT_TRUE(judge_with("ulp:4", f).pass);
  EXPECT_EQ(judge_with("ulp:2", f).reason, "ulp_exceeds_bound");
  EXPECT_EQ(judge_with("cosine", f).reason, "cosine_below_bound");
  EXPECT_TRUE(judge_with("cosine:0.95", f).pass);
  f.close_to_fp64 = true;
  EXPECT_EQ(judge_with("allclose", f).reason, "allclose_to_fp64");
  // relative: RMSE/RMS 3e-3 against max(2 x 1e-3, 2^-13) fails in fp32, passes under bf16's 2^-7.
  EXPECT_EQ(judge_with("relative", f).reason, "relative_rmse_exceeds_bound");
  EXPECT_TRUE(judge_with("relative", f, "bfloat16").pass);
  EXPECT_DOUBLE_EQ(relative_threshold("bfloat16"), 1.0 / 128);
}

TEST(RuleRegistry, SweepsBlindSpotsAndReportsComeFromTheRow) {
  EXPECT_EQ(rules_using_tol(), "same and allclose");
  Metrics tiny;  // values of about 1e-3: atol = 1e-3 hides a 1% error
  tiny.ref_max_abs = 1e-3;
  tiny.ref_rms = 5e-4;
  Verdict v;
  ToleranceRule rule;
  rule_kind(ToleranceRule::Kind::Same).blind_spot(tiny, rule, v);
  EXPECT_EQ(v.blind_spot, "atol_dominates");
  Metrics mid;  // a 1% error at max 0.5 is beyond atol, so allclose sees it
  mid.ref_max_abs = 0.5;
  mid.ref_rms = 0.005;  // 1% of it, 5e-5, is under the RMSE bound's slack tol/10 = 1e-4
  v = Verdict{};
  rule_kind(ToleranceRule::Kind::Same).blind_spot(mid, rule, v);
  EXPECT_EQ(v.blind_spot, "rmse_slack_dominates");
  v = Verdict{};
  rule_kind(ToleranceRule::Kind::Allclose).blind_spot(mid, rule, v);
  EXPECT_EQ(v.blind_spot, "");
  EXPECT_EQ(rule_kind(ToleranceRule::Kind::Ulp).blind_spot, nullptr);
  EXPECT_EQ(rule_kind(ToleranceRule::Kind::Same).describe(rule), "RMSE multipliers 2 fp32, 3 low precision");
  const ToleranceRule ulp = parse_rule("ulp:4");
  EXPECT_EQ(rule_kind(ulp.kind).plot_line(ulp, 0)->label, "rule: 4 ulp");
  EXPECT_FALSE(rule_kind(ulp.kind).plot_line(ulp, 1));
  EXPECT_EQ(rule_kind(ToleranceRule::Kind::Allclose).plot_line(rule, 1)->label, "tol 0.001 (allclose rtol)");
}

}  // namespace
}  // namespace pt2diff
