// tests/engine/compare/verdict_levels_test.cpp — the three verdict levels (pass, suspicious, fail), vacuous
// verdicts, the relative rule and the scale-aware ranking (docs/verdicts.md), on real runs: the fault
// backend plants a deterministic error, eager and fp64 are computed here, and every expectation is derived
// from the numbers the run measured.
#include <ATen/ops/arange.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "../../test_support.h"
#include "pt2diff/compare.h"
#include "pt2diff/html.h"
#include "pt2diff/sweep.h"
#include "pt2diff/testing.h"

namespace pt2diff {
namespace {

using testing::fixture;

DiffResult run(const std::string& graph, const std::string& inputs, DiffOptions o) {
  const Program p = load_program(fixture(graph));
  return diff(p, bind_inputs(p, load_inputs(fixture(inputs))), o);
}

DiffOptions with(const std::string& compiled) {
  DiffOptions o;
  o.compiled = compiled;
  return o;
}

// fc2 scaled by 1 + 2e-4: inside allclose's 1e-3, but thousands of times eager's fp32 rounding.
const char* kSubTolerance = "fault:addmm#2:scale=2e-4";

const NodeError& node(const DiffResult& r, const std::string& name) {
  auto it = std::find_if(r.nodes.begin(), r.nodes.end(), [&](const NodeError& n) { return n.name == name; });
  if (it == r.nodes.end()) throw std::runtime_error("no node " + name);
  return *it;
}

TEST(VerdictLevels, PassingButFarWorseThanEagerIsSuspicious) {
  const DiffResult r = run("mlp_core.pt2", "mlp_inputs.pt", with(kSubTolerance));
  ASSERT_EQ(r.outputs.size(), 1u);
  const OutputVerdict& o = r.outputs[0];
  EXPECT_TRUE(o.verdict.pass) << o.verdict.detail;  // the same() rule passes it ...
  const double ratio = o.compiled_to_fp64.rmse / std::max(o.eager_to_fp64.rmse, o.eager_to_fp64.unit_roundoff * o.eager_to_fp64.ref_rms);
  EXPECT_GE(ratio, 1000);  // ... at more than 1000x eager's distance to fp64
  EXPECT_DOUBLE_EQ(o.verdict.error_ratio, ratio);
  EXPECT_EQ(o.verdict.level, Level::Suspicious);
  EXPECT_TRUE(r.suspicious);
  EXPECT_FALSE(r.diverged);
  EXPECT_FALSE(counts_as_failing(r));
  // Suspicious outputs are not bisected unless asked; the node verdict names the node without a search.
  EXPECT_EQ(r.node_verdict.level, Level::Suspicious);
  ASSERT_TRUE(r.localization);
  EXPECT_EQ(r.localization->found_by, "node_evidence");
  EXPECT_TRUE(r.localization->probes.empty());
  EXPECT_EQ(r.localization->culprit.nodes, std::vector<std::string>{"addmm_1"});
  DiffOptions strict = with(kSubTolerance);
  strict.fail_on_suspicious = true;
  EXPECT_TRUE(counts_as_failing(run("mlp_core.pt2", "mlp_inputs.pt", strict)));
  // The default flags 1000x whatever K is; a K above the measured ratio passes it, 0 turns the level off.
  EXPECT_LE(kDefaultSuspiciousRatio, 1000);
  DiffOptions loose = with(kSubTolerance);
  loose.rule.suspicious_ratio = 2 * ratio;
  EXPECT_EQ(run("mlp_core.pt2", "mlp_inputs.pt", loose).outputs[0].verdict.level, Level::Pass);
  loose.rule.suspicious_ratio = 0;
  EXPECT_EQ(run("mlp_core.pt2", "mlp_inputs.pt", loose).outputs[0].verdict.level, Level::Pass);
}

TEST(VerdictLevels, CleanRunsStayPass) {
  for (const auto& [graph, inputs] : std::vector<std::pair<std::string, std::string>>{
           {"mlp_core.pt2", "mlp_inputs.pt"}, {"attention_core.pt2", "attention_inputs.pt"}, {"bf16_block.pt2", "bf16_block_inputs.pt"}}) {
    const DiffResult r = run(graph, inputs, with("eager"));
    for (const OutputVerdict& o : r.outputs) {
      EXPECT_EQ(o.verdict.level, Level::Pass) << graph << " " << o.name << " ratio " << o.verdict.error_ratio;
      EXPECT_LE(o.verdict.error_ratio, 1) << graph;  // compiled = eager: never farther than itself
    }
    EXPECT_FALSE(r.suspicious) << graph;
    // A different summation order is noise, not a suspect: the same order of error as eager.
  }
  const DiffResult reordered = run("mlp_core.pt2", "mlp_inputs.pt", with("fault:addmm#2:reorder"));
  EXPECT_EQ(reordered.outputs[0].verdict.level, Level::Pass) << reordered.outputs[0].verdict.error_ratio;
}

TEST(VerdictLevels, CliExitCodes) {
  const std::string base = fixture("mlp_core.pt2") + " " + fixture("mlp_inputs.pt") + " --compiled '" + kSubTolerance + "'";
  const testing::CliResult suspicious = testing::run_cli(base);
  EXPECT_EQ(suspicious.exit_code, 0) << suspicious.err;
  EXPECT_NE(suspicious.out.find("SUSPICIOUS addmm_1"), std::string::npos) << suspicious.out;
  EXPECT_NE(suspicious.out.find("suspicious: the rule passes (allclose), but compiled is"), std::string::npos) << suspicious.out;
  EXPECT_EQ(testing::run_cli(base + " --fail-on-suspicious").exit_code, 1);
  // With the output level off, the node verdict still flags addmm_1 (1740x eager's local error); both off: 0.
  EXPECT_EQ(testing::run_cli(base + " --suspicious-ratio 0 --fail-on-suspicious").exit_code, 1);
  EXPECT_EQ(testing::run_cli(base + " --suspicious-ratio 0 --node-ratio 0 --fail-on-suspicious").exit_code, 0);
  // Node evidence fails the run on its own at --node-fail-ratio (off by default: docs/verdicts.md).
  EXPECT_EQ(testing::run_cli(base + " --suspicious-ratio 0 --node-fail-ratio 100 --no-localize").exit_code, 1);
  EXPECT_EQ(testing::run_cli(base + " --suspicious-ratio 0 --node-fail-ratio 1e6 --no-localize").exit_code, 0);
  const testing::CliResult clean = testing::run_cli(fixture("mlp_core.pt2") + " " + fixture("mlp_inputs.pt") + " --compiled eager --fail-on-suspicious");
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  const testing::CliResult bad = testing::run_cli(base + " --suspicious-ratio -3");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--suspicious-ratio"), std::string::npos) << bad.err;
}

TEST(VerdictLevels, LocalizeSuspiciousFindsThePlantedNode) {
  DiffOptions o = with(kSubTolerance);
  o.localize_suspicious = true;
  const DiffResult r = run("mlp_core.pt2", "mlp_inputs.pt", o);
  ASSERT_TRUE(r.localization);
  const Culprit& c = r.localization->culprit;
  ASSERT_EQ(c.kind, Culprit::Kind::SingleOp) << c.summary;
  EXPECT_EQ(c.nodes, std::vector<std::string>{"addmm_1"});
  EXPECT_EQ(c.verdict.level, Level::Suspicious);  // the window's level: it passes the rule
  EXPECT_NE(c.summary.find("is suspicious"), std::string::npos) << c.summary;
  EXPECT_EQ(r.localization->exploded_suspects, std::vector<std::string>{"addmm_1"});
}

TEST(VerdictLevels, TinyLogitsAreVacuousUnderSameAndFailUnderRelative) {
  // Logits of RMS ~1e-10 with a 5% error in every one: same()'s absolute atol cannot see it.
  const std::string graph = "verdicts/tiny_logits.pt2", inputs = "verdicts/tiny_logits_inputs.pt";
  const char* planted = "fault:linear#2:scale=0.05";
  const DiffResult same = run(graph, inputs, with(planted));
  ASSERT_EQ(same.outputs.size(), 1u);
  const OutputVerdict& o = same.outputs[0];
  EXPECT_TRUE(o.verdict.pass);
  EXPECT_LT(o.compiled_to_fp64.ref_max_abs, 1e-3);
  EXPECT_NEAR(relative_rmse(o.compiled_to_fp64), 0.05, 0.005);
  EXPECT_EQ(o.verdict.blind_spot, "atol_dominates") << o.verdict.blind_detail;
  EXPECT_NE(to_text(same).find("vacuous (atol_dominates)"), std::string::npos);
  EXPECT_NE(to_summary(same).find("--rule relative"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(to_json(same));
  EXPECT_EQ(j["outputs"][0]["blind_spot"], "atol_dominates");
  EXPECT_EQ(j["outputs"][0]["level"], "suspicious");  // 5% is also far beyond eager's error
  EXPECT_EQ(j["level"], "suspicious");
  const std::string html = to_html(same);
  EXPECT_NE(html.find("<span class=\"badge suspicious\">SUSPICIOUS</span>"), std::string::npos);
  EXPECT_NE(html.find("<strong>vacuous</strong> (<code>atol_dominates</code>)"), std::string::npos);

  DiffOptions relative = with(planted);
  relative.rule = parse_rule("relative");
  const DiffResult rel = run(graph, inputs, relative);
  EXPECT_EQ(rel.outputs[0].verdict.level, Level::Fail);
  EXPECT_EQ(rel.outputs[0].verdict.reason, "relative_rmse_exceeds_bound") << rel.outputs[0].verdict.detail;
  EXPECT_TRUE(rel.outputs[0].verdict.blind_spot.empty());  // a scale-aware rule has no absolute slack
  EXPECT_TRUE(rel.diverged);
  // And no false alarm: the same graph with nothing planted passes the relative rule.
  DiffOptions clean = with("eager");
  clean.rule = parse_rule("relative");
  EXPECT_EQ(run(graph, inputs, clean).outputs[0].verdict.level, Level::Pass);
  const testing::CliResult cli = testing::run_cli(fixture(graph) + " " + fixture(inputs) + " --compiled '" + planted + "' --rule relative --no-localize");
  EXPECT_EQ(cli.exit_code, 1) << cli.out;
}

TEST(VerdictLevels, RelativeRuleOnTensors) {
  // fp64 values exactly representable in fp32: eager is exact, so its error is floored at fp32's rounding.
  const at::Tensor fp64 = at::arange(1, 2001, at::TensorOptions().dtype(at::kDouble)).div(64);
  const at::Tensor eager = fp64.to(at::kFloat);
  const ToleranceRule rule = parse_rule("relative");
  const Verdict exact = judge(eager, eager, fp64, rule);
  EXPECT_EQ(exact.level, Level::Pass);
  EXPECT_EQ(exact.error_ratio, 0);  // no error at all
  const Metrics e = measure(eager, fp64);
  for (double d : {1e-6, 1e-5, 1e-3}) {
    const at::Tensor result = fp64.mul(1 + d).to(at::kFloat);
    const Verdict v = judge(result, eager, fp64, rule);
    const Metrics m = measure(result, fp64);
    EXPECT_DOUBLE_EQ(v.error_ratio, m.rmse / (e.unit_roundoff * e.ref_rms)) << d;
    // Relative RMSE d against fp32's threshold 2^-13 (eager's own error is 0).
    EXPECT_EQ(v.pass, relative_rmse(m) <= std::ldexp(1.0, -13)) << d << " " << v.detail;
    EXPECT_EQ(v.level, !v.pass ? Level::Fail : v.error_ratio >= kDefaultSuspiciousRatio ? Level::Suspicious : Level::Pass) << d;
  }
  EXPECT_EQ(judge(fp64.mul(1 + 1e-6).to(at::kFloat), eager, fp64, rule).level, Level::Pass);
  EXPECT_EQ(judge(fp64.mul(1 + 1e-5).to(at::kFloat), eager, fp64, rule).level, Level::Suspicious);
  EXPECT_EQ(judge(fp64.mul(1 + 1e-3).to(at::kFloat), eager, fp64, rule).level, Level::Fail);
  // A bf16 result is held to bf16's threshold 2^-7: a 0.5% error passes, 2% fails.
  const at::Tensor lp = fp64.to(at::kBFloat16);
  EXPECT_TRUE(judge(fp64.mul(1.005).to(at::kBFloat16), lp, fp64, rule).pass);
  EXPECT_FALSE(judge(fp64.mul(1.02).to(at::kBFloat16), lp, fp64, rule).pass);
}

TEST(VerdictLevels, RmseSlackBlindSpotOnSparseValues) {
  // One large element (so allclose's atol does not cover the max) and the rest zero: RMS 1e-3 x 0.5.
  at::Tensor fp64 = at::zeros({1000000}, at::TensorOptions().dtype(at::kDouble));
  fp64.narrow(0, 0, 1).fill_(0.5);
  const at::Tensor eager = fp64.to(at::kFloat);
  const Verdict v = judge(eager, eager, fp64, ToleranceRule{});
  const Metrics m = measure(eager, fp64);
  ASSERT_GT(m.ref_max_abs, 1e-3 / (0.01 - 1e-3));
  ASSERT_LE(0.01 * m.ref_rms, 1e-4);
  EXPECT_EQ(v.blind_spot, "rmse_slack_dominates") << v.blind_detail;
  EXPECT_TRUE(judge(eager, eager, fp64, parse_rule("allclose")).blind_spot.empty());  // allclose has no RMSE slack
}

TEST(Ranking, ScaleAwareNotUlp) {
  // fc1's output has elements near zero: its eager local error is hundreds of ulp but 1e-7 of its scale.
  // A small fault (3e-6) in fc2 shows fewer ulp, yet it is the only place compiled is worse than eager.
  const DiffResult r = run("mlp_core.pt2", "mlp_inputs.pt", with("fault:addmm#2:scale=3e-6"));
  const NodeError &fc1 = node(r, "addmm"), &fc2 = node(r, "addmm_1");
  ASSERT_GT(fc1.local_ulp, fc2.compiled_local_ulp) << "the case needs ULPs to rank fc1 first";
  ASSERT_FALSE(r.ranking.empty());
  EXPECT_EQ(r.nodes[r.ranking.front()].name, "addmm_1");
  EXPECT_GT(fc2.compiled_vs_eager, 10);
  EXPECT_LT(fc1.compiled_vs_eager, 2);
  EXPECT_LT(fc1.local_relative, 1e-6);
  for (size_t k = 1; k < r.ranking.size(); ++k)
    EXPECT_GE(r.nodes[r.ranking[k - 1]].compiled_vs_eager, r.nodes[r.ranking[k]].compiled_vs_eager);
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["ranking"][0], "addmm_1");
  // Without an exploded compile the eager local relative error ranks.
  DiffOptions o = with("fault:addmm#2:scale=3e-6");
  o.exploded = false;
  const DiffResult eager_only = run("mlp_core.pt2", "mlp_inputs.pt", o);
  for (size_t k = 1; k < eager_only.ranking.size(); ++k)
    EXPECT_GE(eager_only.nodes[eager_only.ranking[k - 1]].local_relative, eager_only.nodes[eager_only.ranking[k]].local_relative);
}

// The node verdict (docs/verdicts.md, "Node evidence"): the output level off (--suspicious-ratio 0), so the
// outputs pass at level pass and only the exploded compile's evidence at addmm_1 (1 + 2e-4 on an fp32 matmul,
// its local error then ~1740x eager's) can raise the run; every report says so.
TEST(VerdictLevels, NodeEvidenceRaisesAPassingRunAndNamesTheNode) {
  DiffOptions o = with(kSubTolerance);
  o.rule.suspicious_ratio = 0;
  const DiffResult r = run("mlp_core.pt2", "mlp_inputs.pt", o);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].verdict.level, Level::Pass);
  const NodeVerdict& nv = r.node_verdict;
  ASSERT_TRUE(nv.available);
  ASSERT_EQ(nv.findings.size(), 1u);
  const NodeFinding& f = nv.findings[0];
  const NodeError& n = node(r, "addmm_1");
  const ValueError& v = n.values[0];
  EXPECT_EQ(f.node, "addmm_1");
  EXPECT_EQ(f.op, n.target);
  EXPECT_EQ(f.source, n.source);
  EXPECT_EQ(f.module_path, n.module_path);
  EXPECT_DOUBLE_EQ(f.ratio, error_ratio(v.compiled_local, v.local));  // the two local errors the node table shows
  EXPECT_GE(f.ratio, 1000);
  EXPECT_EQ(f.level, Level::Suspicious);  // --node-fail-ratio is off by default
  EXPECT_EQ(nv.worst_node, "addmm_1");
  EXPECT_EQ(nv.level, Level::Suspicious);
  EXPECT_EQ(result_level(r), Level::Suspicious);
  EXPECT_FALSE(counts_as_failing(r));
  // Named without a search compile; one compile with addmm_1 eager confirms it (the fault backend leaves it eager).
  ASSERT_TRUE(r.localization);
  EXPECT_EQ(r.localization->found_by, "node_evidence");
  EXPECT_EQ(r.localization->culprit.nodes, std::vector<std::string>{"addmm_1"});
  EXPECT_TRUE(r.localization->probes.empty());
  ASSERT_TRUE(nv.confirmation);
  EXPECT_EQ(nv.confirmation->conclusion, "confirmed") << nv.confirmation->summary;
  EXPECT_EQ(nv.confirmation->compiles, 1u);
  EXPECT_GE(nv.confirmation->before, 1000);
  EXPECT_LE(nv.confirmation->after, kNodeConfirmBound);
  // Every report.
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["level"], "suspicious");
  EXPECT_EQ(j["fails"], false);
  EXPECT_EQ(j["node_verdict"]["findings"][0]["node"], "addmm_1");
  EXPECT_DOUBLE_EQ(j["node_verdict"]["findings"][0]["ratio"].get<double>(), f.ratio);
  EXPECT_DOUBLE_EQ(j["node_verdict"]["findings"][0]["eager_local"]["rmse"].get<double>(), v.local.rmse);
  EXPECT_DOUBLE_EQ(j["node_verdict"]["findings"][0]["compiled_local"]["rmse"].get<double>(), v.compiled_local.rmse);
  EXPECT_EQ(j["localization"]["found_by"], "node_evidence");
  const std::string text = to_text(r);
  EXPECT_NE(text.find("node verdict: suspicious"), std::string::npos) << text;
  EXPECT_NE(text.find("SUSPICIOUS (a node stands out; the outputs pass)"), std::string::npos) << text;
  EXPECT_NE(to_summary(r).find("node addmm_1 (aten.addmm.default) stands out (suspicious)"), std::string::npos) << to_summary(r);
  EXPECT_NE(to_html(r).find("<section id=\"node-verdict\">"), std::string::npos);
  // testing.h: suspicious fails only when asked, and says why.
  EXPECT_TRUE(agrees_with_reference(fixture("mlp_core.pt2"), fixture("mlp_inputs.pt"), o));
  o.fail_on_suspicious = true;
  const ::testing::AssertionResult strict = agrees_with_reference(fixture("mlp_core.pt2"), fixture("mlp_inputs.pt"), o);
  ASSERT_FALSE(strict);
  EXPECT_NE(std::string(strict.message()).find("is suspicious at a node"), std::string::npos) << strict.message();
  // --node-fail-ratio below the ratio: the run fails on the node evidence alone; above it, suspicious.
  o.fail_on_suspicious = false;
  o.rule.node_fail_ratio = f.ratio / 2;
  const DiffResult failing = run("mlp_core.pt2", "mlp_inputs.pt", o);
  EXPECT_EQ(result_level(failing), Level::Fail);
  EXPECT_TRUE(counts_as_failing(failing));
  EXPECT_FALSE(failing.diverged);  // the outputs still pass the rule
  o.rule.node_fail_ratio = f.ratio * 2;
  EXPECT_EQ(result_level(run("mlp_core.pt2", "mlp_inputs.pt", o)), Level::Suspicious);
  // --node-ratio above the ratio, or 0: nothing stands out.
  o.rule.node_ratio = f.ratio * 2;
  EXPECT_EQ(result_level(run("mlp_core.pt2", "mlp_inputs.pt", o)), Level::Pass);
  o.rule.node_ratio = 0;
  EXPECT_EQ(result_level(run("mlp_core.pt2", "mlp_inputs.pt", o)), Level::Pass);
}

// --workaround after the node verdict: the levers leave eager the nodes it names. Where they leave exactly the
// confirmation's set (the training IR: fc2 holds linear_1 alone), the confirmation's compile verifies them and
// the workaround compiles nothing; where the module holds more (core ATen: fc2 is permute + addmm), one compile.
TEST(VerdictLevels, TheWorkaroundReusesTheConfirmationsCompileOfTheSameSet) {
  for (const auto& [graph, fault, verify_compiles] : std::vector<std::tuple<std::string, std::string, size_t>>{
           {"mlp.pt2", "fault:linear#2:scale=2e-4", 0}, {"mlp_core.pt2", kSubTolerance, 1}}) {
    DiffOptions o = with(fault);
    o.rule.suspicious_ratio = 0;
    o.workaround.enabled = true;
    const DiffResult r = run(graph, "mlp_inputs.pt", o);
    ASSERT_TRUE(r.node_verdict.confirmation) << graph;
    EXPECT_EQ(r.node_verdict.confirmation->conclusion, "confirmed") << graph;
    ASSERT_TRUE(r.workaround) << graph;
    const Workaround& w = *r.workaround;
    EXPECT_EQ(w.conclusion, Workaround::Conclusion::Found) << w.summary;
    EXPECT_TRUE(w.verified) << w.verification;
    ASSERT_EQ(w.nodes.size(), 1u) << graph;
    EXPECT_EQ(w.verified_nodes, verify_compiles == 0 ? 1u : 2u) << graph;
    EXPECT_EQ(w.compiles, verify_compiles) << w.summary;
    EXPECT_EQ(w.summary.find("no compile of its own") != std::string::npos, verify_compiles == 0) << w.summary;
  }
}

// The report states the engine process's resident memory (issue 33: pt2diff's memory beside eager's): at the
// diff's start and its peak since the process started, as /proc/self/status says before and after the run.
TEST(VerdictLevels, TheReportStatesTheEnginesHostMemory) {
  auto status = [](const std::string& key) -> int64_t {
    std::ifstream f("/proc/self/status");
    for (std::string line; std::getline(f, line);)
      if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
    return -1;
  };
  const int64_t hwm_before = status("VmHWM");
  const DiffResult r = run("mlp.pt2", "mlp_inputs.pt", with("eager"));
  const int64_t hwm_after = status("VmHWM");
  ASSERT_GT(hwm_before, 0);
  EXPECT_GT(r.devices.start_host_bytes, 0);
  EXPECT_LE(r.devices.start_host_bytes, r.devices.peak_host_bytes);
  EXPECT_GE(r.devices.peak_host_bytes, hwm_before);
  EXPECT_LE(r.devices.peak_host_bytes, hwm_after);
  EXPECT_EQ(r.devices.peak_gpu_bytes, -1);  // a CPU run
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["devices"]["start_host_bytes"].get<int64_t>(), r.devices.start_host_bytes);
  EXPECT_EQ(j["devices"]["peak_host_bytes"].get<int64_t>(), r.devices.peak_host_bytes);
  // Each stage's time and memory, in pipeline order: the stages' times within the run's, the last one's resident
  // memory within the process's peak.
  ASSERT_EQ(r.stages.size(), j["stages"].size());
  ASSERT_GE(r.stages.size(), 10u);
  EXPECT_EQ(r.stages.front().name, "plan_run");
  EXPECT_EQ(r.stages[1].name, "run_references");
  EXPECT_EQ(r.stages.back().name, "rank_nodes");
  double stage_seconds = 0;
  for (const StageRecord& st : r.stages) {
    stage_seconds += st.seconds;
    EXPECT_EQ(st.peak_gpu_bytes, -1) << st.name;
    EXPECT_GT(st.host_bytes, 0) << st.name;
    EXPECT_LE(st.host_bytes, hwm_after) << st.name;
  }
  EXPECT_LE(stage_seconds, r.seconds);
  EXPECT_GT(stage_seconds, 0.5 * r.seconds);  // the stages are the run
  EXPECT_GT(r.stages[1].seconds, 0);          // the lockstep runs
}

TEST(VerdictLevels, NodeVerdictOfCleanRunsAndWithoutExplodedCompile) {
  for (const auto& [graph, inputs] : std::vector<std::pair<std::string, std::string>>{
           {"mlp_core.pt2", "mlp_inputs.pt"}, {"attention_core.pt2", "attention_inputs.pt"}, {"bf16_block.pt2", "bf16_block_inputs.pt"}}) {
    const DiffResult r = run(graph, inputs, with("eager"));
    EXPECT_TRUE(r.node_verdict.available) << graph;
    EXPECT_GT(r.node_verdict.judged, 0u) << graph;
    EXPECT_EQ(r.node_verdict.level, Level::Pass) << graph;
    EXPECT_LE(r.node_verdict.worst_ratio, 1) << graph;  // compiled = eager at every node
    EXPECT_FALSE(r.localization) << graph;
  }
  DiffOptions o = with(kSubTolerance);
  o.exploded = false;
  const DiffResult r = run("mlp_core.pt2", "mlp_inputs.pt", o);
  EXPECT_FALSE(r.node_verdict.available);
  EXPECT_NE(r.node_verdict.unavailable.find("--no-exploded"), std::string::npos);
}

TEST(VerdictLevels, TestingHelperFailsOnSuspiciousOnlyWhenAsked) {
  DiffOptions o = with(kSubTolerance);
  const ::testing::AssertionResult lenient = agrees_with_reference(fixture("mlp_core.pt2"), fixture("mlp_inputs.pt"), o);
  EXPECT_TRUE(lenient);
  EXPECT_NE(std::string(lenient.message()).find("output addmm_1 is suspicious"), std::string::npos) << lenient.message();
  o.fail_on_suspicious = true;
  const ::testing::AssertionResult strict = agrees_with_reference(fixture("mlp_core.pt2"), fixture("mlp_inputs.pt"), o);
  ASSERT_FALSE(strict);
  EXPECT_NE(std::string(strict.message()).find("the compiled graph is suspicious"), std::string::npos) << strict.message();
}

TEST(VerdictLevels, SweepPointsHaveLevels) {
  const Program p = load_program(fixture("mlp_core.pt2"));
  SweepOptions o;
  o.diff.compiled = kSubTolerance;
  o.tols = {1e-6, 1e-3};
  const SweepResult s = sweep(p, bind_inputs(p, load_inputs(fixture("mlp_inputs.pt"))), o);
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].outputs[0].level, Level::Fail);
  EXPECT_EQ(s.points[1].outputs[0].level, Level::Suspicious);
  EXPECT_EQ(s.points[1].suspicious_outputs, 1u);
  EXPECT_NE(sweep_to_text(s).find("SUSP"), std::string::npos);
  EXPECT_NE(sweep_to_csv(s).find(",suspicious\n"), std::string::npos);
  EXPECT_FALSE(s.points[1].localization);  // --localize alone localizes failing points only
  o.localize = true;
  o.diff.localize_suspicious = true;
  const SweepResult l = sweep(p, bind_inputs(p, load_inputs(fixture("mlp_inputs.pt"))), o);
  ASSERT_TRUE(l.points[1].localization);
  EXPECT_EQ(l.points[1].localization->culprit.nodes, std::vector<std::string>{"addmm_1"});
}

}  // namespace
}  // namespace pt2diff
