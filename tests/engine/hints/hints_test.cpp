// tests/engine/hints/hints_test.cpp — planted faults map to the dtype-promotion finding their nature
// implies: bf16 rounding is lower precision than promotion requires, a scale is not a rounding effect.
#include <algorithm>
#include <gtest/gtest.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "../../test_support.h"
#include "engine/hints/hint_registry.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/compare.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

using testing::fixture;

const Hint* find_hint(const DiffResult& r, const std::string& kind) {
  if (!r.localization) return nullptr;
  for (const Hint& h : r.localization->hints)
    if (h.kind == kind) return &h;
  return nullptr;
}

DiffResult run_hints(const std::string& name, const std::string& spec) {
  Program p = load_program(fixture(name + ".pt2"));
  DiffOptions o;
  o.compiled = spec;
  return diff(p, bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt"))), o);
}

TEST(DtypePromotionHint, Bf16RoundingIsLowerPrecisionThanPromotion) {
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{
           {"mlp", "linear"}, {"attention_core", "bmm_1"}, {"conv_bn_relu", "conv2d"}, {"ln_softmax_gelu", "layer_norm"}}) {
    DiffResult r = run_hints(name, "fault:" + node + ":bf16");
    const Hint* h = find_hint(r, "dtype_promotion");
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->finding, "lower_precision_than_promotion") << name << ": " << h->summary;
    EXPECT_EQ(find_hint(r, "compiler_lever"), nullptr);  // no compiler config to pull on the fault backend
  }
}

TEST(DtypePromotionHint, AScaleIsNotExplainedByPromotion) {
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{
           {"mlp", "linear"}, {"attention_core", "bmm_1"}, {"bf16_block", "matmul"}, {"conv_bn_relu", "conv2d"}}) {
    DiffResult r = run_hints(name, "fault:" + node + ":scale=0.05");
    const Hint* h = find_hint(r, "dtype_promotion");
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->finding, "not_explained_by_promotion") << name << ": " << h->summary;
    EXPECT_FALSE(h->evidence.empty());
  }
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

/// Judged bit for bit against eager first (tol 0): only the planted node differs from eager, and a
/// different summation order there fails unless it is at least twice as accurate.
DiffResult run_exacting(const std::string& name, const std::string& spec) {
  Program p = load_program(fixture(name + ".pt2"));
  DiffOptions o;
  o.compiled = spec;
  o.rule.tol = 0;
  o.rule.fp32_multiplier = o.rule.low_precision_multiplier = 0.5;
  return diff(p, bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt"))), o);
}

TEST(ReductionOrderHint, ReorderedSummationIsInsideTheEnvelope) {
  int explained = 0;
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{{"mlp", "linear"},
                                                                            {"mlp_core", "addmm"},
                                                                            {"attention_core", "bmm_1"},
                                                                            {"attention_core", "addmm"},
                                                                            {"attention_core", "_softmax"},
                                                                            {"conv_bn_relu_core", "convolution"},
                                                                            {"ln_softmax_gelu_core", "_softmax"}}) {
    DiffResult r = run_exacting(name, "fault:" + node + ":reorder");
    if (!r.diverged) continue;  // this order happens to round exactly like eager's
    ASSERT_TRUE(r.localization) << name << " " << node;
    // The single op, or a window ending at it (its inputs decide whether the new order rounds differently).
    ASSERT_FALSE(r.localization->culprit.nodes.empty()) << name;
    ASSERT_EQ(r.localization->culprit.nodes.back(), node) << name << ": " << r.localization->culprit.summary;
    const Hint* h = find_hint(r, "reduction_order");
    ASSERT_NE(h, nullptr) << name << " " << node;
    EXPECT_EQ(h->finding, "inside_envelope") << name << ": " << h->summary;
    ++explained;
  }
  EXPECT_GE(explained, 4);
}

TEST(ReductionOrderHint, AScaleOrBf16RoundingIsOutsideTheEnvelope) {
  for (const char* kind : {"scale=0.05", "bf16"}) {
    DiffResult r = run_hints("mlp", std::string("fault:linear:") + kind);
    const Hint* h = find_hint(r, "reduction_order");
    ASSERT_NE(h, nullptr) << kind;
    EXPECT_EQ(h->finding, "outside_envelope") << kind << ": " << h->summary;
  }
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

TEST(ExplainCli, RunsTheExperimentsOnAnyNode) {
  auto r = testing::run_cli("explain " + fixture("mlp.pt2") + " " + fixture("mlp_inputs.pt") +
                            " --node linear --compiled fault:linear:reorder");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reduction_order (inside_envelope): linear (aten.linear.default, N = 32)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rmse_reversed_to_fp64"), std::string::npos);
  auto bf16 = testing::run_cli("explain " + fixture("mlp.pt2") + " --node linear --compiled fault:linear:bf16");
  EXPECT_NE(bf16.out.find("dtype_promotion (lower_precision_than_promotion)"), std::string::npos) << bf16.out;
  auto bad = testing::run_cli("explain " + fixture("mlp.pt2") + " --node nosuch --compiled eager");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no node named 'nosuch'"), std::string::npos) << bad.err;
}

TEST(ExplainCli, RunsTheExperimentsOnAWindow) {
  auto r = testing::run_cli("explain " + fixture("mixed_precision.pt2") + " --node linear --to softmax --compiled fault:add:demote");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("window linear .. softmax"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dtype_promotion (promotion_differs_from_pytorch)"), std::string::npos) << r.out;
  // Both reductions of the window (the linear and the softmax) are reordered together.
  EXPECT_NE(r.out.find("the window's 2 reductions"), std::string::npos) << r.out;
  auto backwards = testing::run_cli("explain " + fixture("mixed_precision.pt2") + " --node softmax --to linear --compiled eager");
  EXPECT_EQ(backwards.exit_code, 2);
  EXPECT_NE(backwards.err.find("the window's last node 'linear' comes before its first 'softmax'"), std::string::npos) << backwards.err;
}

TEST(DtypePromotionHint, ADemotedMixedDtypeOpDiffersFromPyTorchsPromotion) {
  DiffResult r = run_hints("mixed_precision", "fault:add:demote");
  ASSERT_TRUE(r.localization);
  ASSERT_EQ(r.localization->culprit.nodes, std::vector<std::string>{"add"}) << r.localization->culprit.summary;
  const Hint* h = find_hint(r, "dtype_promotion");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->finding, "promotion_differs_from_pytorch") << h->summary;
  ASSERT_EQ(h->notes.size(), 1u);
  EXPECT_EQ(h->notes[0], "add (aten.add.Tensor): inputs float32, bfloat16 -> at::result_type float32; graph float32  [mixed]");
  // Rounding the same op's result to bf16 is the other bug: not a promotion difference.
  DiffResult rounded = run_hints("mixed_precision", "fault:add:bf16");
  ASSERT_NE(find_hint(rounded, "dtype_promotion"), nullptr);
  EXPECT_EQ(find_hint(rounded, "dtype_promotion")->finding, "lower_precision_than_promotion");
}

TEST(FaultBackend, DemoteNeedsAnOpWithMixedFloatingInputs) {
  Program p = load_program(fixture("mlp.pt2"));
  EXPECT_THROW(make_backend("fault:linear:demote", p, {}), Error);
}

TEST(ReductionOrderHint, SoftmaxAndConvolutionHaveBlockedAndPairwiseOrders) {
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{{"conv_bn_relu_core", "convolution"},
                                                                            {"ln_softmax_gelu_core", "_softmax"},
                                                                            {"mixed_precision", "softmax"}}) {
    DiffResult r = run_hints(name, "fault:" + node + ":scale=0.05");
    const Hint* h = find_hint(r, "reduction_order");
    ASSERT_NE(h, nullptr) << name;
    std::set<std::string> names;
    for (const auto& [k, v] : h->evidence) names.insert(k);
    EXPECT_TRUE(names.count("rmse_blocked_16_to_fp64")) << name;
    EXPECT_TRUE(names.count("rmse_pairwise_to_fp64")) << name;
    EXPECT_EQ(h->finding, "outside_envelope") << name << ": " << h->summary;
  }
}

TEST(HintRegistry, TheReportSchemaListsEveryKindAndFindingOfTheTable) {
  std::ifstream f(std::string(PT2DIFF_FIXTURES) + "/../docs/report.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(f);
  const auto& hint = schema["properties"]["localization"]["oneOf"][1]["properties"]["hints"]["items"]["properties"];
  std::set<std::string> kinds, findings;
  for (const HintExperiment& e : hint_experiments()) {
    kinds.insert(e.kind);
    findings.insert(e.findings.begin(), e.findings.end());
  }
  EXPECT_EQ(hint["kind"]["enum"].get<std::set<std::string>>(), kinds);
  EXPECT_EQ(hint["finding"]["enum"].get<std::set<std::string>>(), findings);
}

TEST(HintRegistry, EveryHintGivenIsOneItsExperimentDeclares) {
  std::map<std::string, std::set<std::string>> declared;
  for (const HintExperiment& e : hint_experiments()) declared[e.kind].insert(e.findings.begin(), e.findings.end());
  size_t seen = 0;
  for (auto [name, spec] : std::vector<std::pair<std::string, std::string>>{{"mlp", "fault:linear:bf16"},
                                                                           {"attention_core", "fault:aten.bmm#2:reorder"},
                                                                           {"bf16_block", "fault:matmul:scale=0.05"},
                                                                           {"mixed_precision", "fault:add:demote"}}) {
    DiffResult r = run_hints(name, spec);
    if (!r.localization) continue;
    for (const Hint& h : r.localization->hints) {
      ++seen;
      ASSERT_TRUE(declared.count(h.kind)) << h.kind;
      EXPECT_TRUE(declared[h.kind].count(h.finding)) << name << ": " << h.kind << " gave " << h.finding;
    }
  }
  EXPECT_GE(seen, 4u);
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

/// A compiler with one lever, playing the run's worker: its own compiles carry a planted fault, and with
/// fallback_by_default=True (every op on its ATen kernel) it compiles as eager does. It records the
/// settings each compile in its process was asked for.
class OneLeverCompiler final : public Backend {
 public:
  OneLeverCompiler(const Program& p, std::vector<std::vector<std::string>>& seen, const std::vector<std::string>& config = {})
      : program_(p), seen_(seen), config_(config) {}
  std::string name() const override { return "one-lever compiler"; }
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override {
    seen_.push_back(config_);
    const bool lever = std::find(config_.begin(), config_.end(), "fallback_by_default=True") != config_.end();
    backends_.push_back(make_backend(lever ? "eager" : "fault:linear:scale=0.05", program_, BackendOptions{}));
    return backends_.back()->compile(region, example_inputs);
  }
  std::unique_ptr<Backend> with_compiler_settings(const BackendOptions& options) override {
    return std::make_unique<OneLeverCompiler>(program_, seen_, options.inductor_config);
  }

 private:
  const Program& program_;
  std::vector<std::vector<std::string>>& seen_;
  std::vector<std::string> config_;
  std::vector<std::unique_ptr<Backend>> backends_;
};

TEST(CompilerLeverHint, PullsEachLeverInTheRunsWorker) {
  Program p = load_program(fixture("mlp.pt2"));
  DiffOptions o;
  // A worker spec takes compiler config, so the levers are tried; a backend of its own for a lever would be
  // this command, which does not exist: the lever's compile must happen in the run's backend.
  o.compiled = "external:/nonexistent/pt2diff-test-worker";
  std::vector<std::vector<std::string>> seen;
  OneLeverCompiler compiler(p, seen);
  DiffResult r = diff(p, bind_inputs(p, load_inputs(fixture("mlp_inputs.pt"))), o, compiler);
  ASSERT_TRUE(r.localization);
  const Hint* h = find_hint(r, "compiler_lever");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->finding, "lever_removes_divergence") << h->summary;
  EXPECT_NE(h->summary.find("fallback_by_default"), std::string::npos) << h->summary;
  for (const std::string& note : h->notes) EXPECT_EQ(note.find("re-compiling failed"), std::string::npos) << note;
  EXPECT_NE(std::find(seen.begin(), seen.end(), std::vector<std::string>{"fallback_by_default=True"}), seen.end());
}

}  // namespace
}  // namespace pt2diff
