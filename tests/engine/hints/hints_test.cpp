// tests/engine/hints/hints_test.cpp — planted faults map to the dtype-promotion finding their nature
// implies: bf16 rounding is lower precision than promotion requires, a scale is not a rounding effect.
#include <gtest/gtest.h>

#include "../../test_support.h"
#include "pt2diff/diff.h"

namespace pt2diff {
namespace {

using testing::fixture;

const Hint* find_hint(const DiffResult& r, const std::string& kind) {
  if (!r.localization) return nullptr;
  for (const Hint& h : r.localization->hints)
    if (h.kind == kind) return &h;
  return nullptr;
}

DiffResult run(const std::string& name, const std::string& spec) {
  Program p = load_program(fixture(name + ".pt2"));
  DiffOptions o;
  o.compiled = spec;
  return diff(p, bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt"))), o);
}

TEST(DtypePromotionHint, Bf16RoundingIsLowerPrecisionThanPromotion) {
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{
           {"mlp", "linear"}, {"attention_core", "bmm_1"}, {"conv_bn_relu", "conv2d"}, {"ln_softmax_gelu", "layer_norm"}}) {
    DiffResult r = run(name, "fault:" + node + ":bf16");
    const Hint* h = find_hint(r, "dtype_promotion");
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->finding, "lower_precision_than_promotion") << name << ": " << h->summary;
    EXPECT_EQ(find_hint(r, "compiler_lever"), nullptr);  // no compiler config to pull on the fault backend
  }
}

TEST(DtypePromotionHint, AScaleIsNotExplainedByPromotion) {
  for (auto [name, node] : std::vector<std::pair<std::string, std::string>>{
           {"mlp", "linear"}, {"attention_core", "bmm_1"}, {"bf16_block", "matmul"}, {"conv_bn_relu", "conv2d"}}) {
    DiffResult r = run(name, "fault:" + node + ":scale=0.05");
    const Hint* h = find_hint(r, "dtype_promotion");
    ASSERT_NE(h, nullptr) << name;
    EXPECT_EQ(h->finding, "not_explained_by_promotion") << name << ": " << h->summary;
    EXPECT_FALSE(h->evidence.empty());
  }
}

}  // namespace
}  // namespace pt2diff
