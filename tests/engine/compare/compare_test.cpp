// tests/engine/compare/compare_test.cpp — metrics and the verdict rule on hand-made tensors.
#include <gtest/gtest.h>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/tensor.h>
#include <limits>
#include <set>

#include "engine/compare/judge_measured.h"
#include "engine/compare/metrics_batch.h"
#include "graphs/rules/rule_registry.h"
#include "pt2diff/compare.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace {

at::Tensor doubles(std::vector<double> v) { return at::tensor(v, at::kDouble); }

TEST(Metrics, RoundingToBf16IsAtMostHalfAnUlp) {
  at::Tensor ref = at::linspace(-3.0, 7.0, 1001, at::kDouble);
  Metrics m = measure(ref.to(at::kBFloat16), ref);
  EXPECT_LE(m.max_ulp, 0.5);
  EXPECT_GT(m.max_ulp, 0.3);
  EXPECT_LE(m.max_rel, std::ldexp(1.0, -8));  // bf16 unit roundoff
  EXPECT_GT(m.cosine, 0.99999);
  EXPECT_EQ(m.nan, 0);
}

TEST(Metrics, FindsTheWorstElementAndItsIndex) {
  at::Tensor ref = at::full({2, 3}, 1.0, at::kDouble);
  at::Tensor x = ref.clone();
  x.data_ptr<double>()[1 * 3 + 2] = 1.5;
  Metrics m = measure(x, ref);
  EXPECT_EQ(m.worst_index, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(m.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.5);
  EXPECT_DOUBLE_EQ(m.rmse, std::sqrt(0.25 / 6));
  EXPECT_EQ(m.mismatches, 1);
  // 0.5 at 1.0 in float64 ulps: 0.5 / 2^-52.
  EXPECT_DOUBLE_EQ(m.max_ulp, 0.5 / std::ldexp(1.0, -52));
  EXPECT_DOUBLE_EQ(measure(x, ref, at::kFloat).max_ulp, 0.5 / std::ldexp(1.0, -23));
}

TEST(Metrics, CountsNonFiniteValuesAndTreatsNaNAsWorst) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Metrics m = measure(doubles({1, nan, inf, 4}), doubles({1, 2, inf, 4.5}));
  EXPECT_EQ(m.nan, 1);
  EXPECT_EQ(m.inf, 1);
  EXPECT_EQ(m.worst_index, std::vector<int64_t>{1});
  EXPECT_TRUE(std::isinf(m.max_abs));
  EXPECT_EQ(m.mismatches, 2);
}

TEST(Metrics, IntegersCountMismatchesOnly) {
  Metrics m = measure(at::tensor({1, 2, 3}, at::kLong), at::tensor({1, 5, 3}, at::kLong));
  EXPECT_TRUE(m.exact_kind);
  EXPECT_EQ(m.mismatches, 1);
  EXPECT_EQ(m.worst_index, std::vector<int64_t>{1});
}

/// measure() on a GPU reduces with ATen ops (measure_with_reductions); on the CPU the two must agree:
/// every count, index and extreme exactly, RMSE and cosine to the rounding of differently ordered sums.
void expect_same_metrics(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp = std::nullopt) {
  const Metrics a = measure(value, reference, ulp), b = measure_with_reductions(value, reference, ulp);
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.exact_kind, b.exact_kind);
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.inf, b.inf);
  EXPECT_EQ(a.ref_nan, b.ref_nan);
  EXPECT_EQ(a.ref_inf, b.ref_inf);
  EXPECT_EQ(a.mismatches, b.mismatches);
  EXPECT_EQ(a.worst_index, b.worst_index);
  EXPECT_EQ(a.max_abs, b.max_abs);
  EXPECT_EQ(a.max_rel, b.max_rel);
  EXPECT_EQ(a.max_ulp, b.max_ulp);
  if (std::isnan(a.worst_value)) EXPECT_TRUE(std::isnan(b.worst_value)); else EXPECT_EQ(a.worst_value, b.worst_value);
  if (std::isnan(a.worst_reference)) EXPECT_TRUE(std::isnan(b.worst_reference)); else EXPECT_EQ(a.worst_reference, b.worst_reference);
  if (std::isfinite(a.rmse)) EXPECT_NEAR(a.rmse, b.rmse, 1e-14 * std::max(1.0, a.rmse)); else EXPECT_EQ(a.rmse, b.rmse);
  EXPECT_NEAR(a.cosine, b.cosine, 1e-14);
}

TEST(Metrics, ReductionsGiveTheLoopsNumbers) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  at::Tensor ref = at::linspace(-3.0, 7.0, 1001, at::kDouble);
  expect_same_metrics(ref.to(at::kBFloat16), ref);
  expect_same_metrics(ref.to(at::kFloat), ref);
  expect_same_metrics(ref.to(at::kHalf).reshape({7, 11, 13}), ref.reshape({7, 11, 13}));
  expect_same_metrics(ref.to(at::kFloat), ref, at::kBFloat16);
  // Ties for the worst element (the first wins), zeros in the reference, subnormals.
  expect_same_metrics(doubles({1, 2, 3, 4}), doubles({0, 3, 2, 4}));
  expect_same_metrics(doubles({1e-310, 0, -0.0, 5e-324}), doubles({0, 1e-310, 0, 0}));
  // NaN and infinities on either side.
  expect_same_metrics(doubles({nan, 1, inf, -inf, 2, nan}), doubles({1, nan, inf, inf, 2, nan}));
  expect_same_metrics(doubles({1, 2}), doubles({inf, 2}));
  // Integers (exact kinds), complex values, empty and 0-dim tensors.
  expect_same_metrics(at::arange(10, at::kLong), at::arange(10, at::kLong) * 2);
  expect_same_metrics(at::linspace(0, 1, 6, at::kComplexFloat), at::linspace(0, 1.1, 6, at::kComplexDouble));
  expect_same_metrics(doubles({}), doubles({}));
  expect_same_metrics(at::full({}, 2.5, at::kFloat), at::full({}, 2.0, at::kDouble));
}

// MetricsBatch (run_references on a GPU): every value's reductions queued, one copy back at flush(), each sink
// given exactly measure_with_reductions()'s metrics of its own value, in the order added; CPU values are
// measured at once unless queued on purpose.
TEST(Metrics, ABatchGivesEachValueItsOwnMetricsAtFlush) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  at::Tensor ref = at::linspace(-3.0, 7.0, 1001, at::kDouble);
  const std::vector<std::pair<at::Tensor, at::Tensor>> cases = {
      {ref.to(at::kBFloat16), ref},
      {doubles({nan, 1, inf, -inf, 2, nan}), doubles({1, nan, inf, inf, 2, nan})},
      {at::arange(10, at::kLong), at::arange(10, at::kLong) * 2},
      {at::linspace(0, 1, 6, at::kComplexFloat), at::linspace(0, 1.1, 6, at::kComplexDouble)},
      {doubles({}), doubles({})},
      {ref.to(at::kHalf).reshape({7, 11, 13}), ref.reshape({7, 11, 13})},
  };
  MetricsBatch queued(/*queue_cpu=*/true);
  std::vector<Metrics> got(cases.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < cases.size(); ++i)
    queued.add(cases[i].first, cases[i].second, std::nullopt, [&, i](const Metrics& m) {
      got[i] = m;
      order.push_back(i);
    });
  EXPECT_EQ(queued.pending(), cases.size());
  EXPECT_TRUE(order.empty());  // nothing until flush()
  queued.flush();
  EXPECT_EQ(queued.pending(), 0u);
  ASSERT_EQ(order.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(order[i], i);
    const Metrics want = measure_with_reductions(cases[i].first, cases[i].second);
    EXPECT_EQ(got[i].numel, want.numel) << i;
    EXPECT_EQ(got[i].exact_kind, want.exact_kind) << i;
    EXPECT_EQ(got[i].nan, want.nan) << i;
    EXPECT_EQ(got[i].ref_nan, want.ref_nan) << i;
    EXPECT_EQ(got[i].mismatches, want.mismatches) << i;
    EXPECT_EQ(got[i].worst_index, want.worst_index) << i;
    EXPECT_EQ(got[i].max_abs, want.max_abs) << i;
    EXPECT_EQ(got[i].max_ulp, want.max_ulp) << i;
    EXPECT_EQ(got[i].unit_roundoff, want.unit_roundoff) << i;
    if (std::isnan(want.rmse)) EXPECT_TRUE(std::isnan(got[i].rmse)) << i; else EXPECT_EQ(got[i].rmse, want.rmse) << i;
    EXPECT_EQ(got[i].cosine, want.cosine) << i;
  }
  // Without queue_cpu a CPU value is measured at once, with measure()'s loop.
  MetricsBatch at_once;
  Metrics now;
  at_once.add(ref.to(at::kFloat), ref, at::kBFloat16, [&](const Metrics& m) { now = m; });
  EXPECT_EQ(at_once.pending(), 0u);
  EXPECT_EQ(now.max_ulp, measure(ref.to(at::kFloat), ref, at::kBFloat16).max_ulp);
  EXPECT_EQ(now.rmse, measure(ref.to(at::kFloat), ref, at::kBFloat16).rmse);
}

TEST(Verdict, AllcloseToEagerPasses) {
  at::Tensor eager = at::linspace(0.0, 1.0, 100, at::kFloat);
  Verdict v = judge(eager + 1e-5, eager, eager.to(at::kDouble), ToleranceRule{});
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.reason, "allclose");
}

TEST(Verdict, RmseAgainstFp64DecidesWhenNotAllclose) {
  at::Tensor fp64 = at::linspace(0.0, 10.0, 2000, at::kDouble);
  at::Tensor eager = (fp64 + 0.01).to(at::kFloat);  // eager is off by 0.01: its own noise floor
  ToleranceRule rule;
  Verdict closer = judge((fp64 + 0.005).to(at::kFloat), eager, fp64, rule);
  EXPECT_TRUE(closer.pass) << closer.detail;  // closer to fp64 than eager: fine
  EXPECT_EQ(closer.reason, "rmse_within_bound");
  Verdict worse = judge((fp64 - 0.05).to(at::kFloat), eager, fp64, rule);
  EXPECT_FALSE(worse.pass) << worse.detail;
  EXPECT_EQ(worse.reason, "rmse_exceeds_bound");
  EXPECT_DOUBLE_EQ(worse.multiplier, 2);  // fp32, numel >= 1000
  EXPECT_NEAR(worse.bound, 2 * 0.01 + 1e-4, 1e-6);
}

TEST(Verdict, NoFp64FailsLoudlyInsteadOfPassing) {
  at::Tensor eager = at::linspace(0.0, 1.0, 100, at::kFloat);
  Verdict v = judge(eager + 0.5, eager, at::Tensor(), ToleranceRule{});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "fp64_unavailable");
}

TEST(Verdict, NaNWhereFp64IsFiniteFails) {
  at::Tensor fp64 = at::linspace(0.0, 1.0, 100, at::kDouble);
  at::Tensor eager = fp64.to(at::kFloat);
  at::Tensor result = eager.clone();
  result.data_ptr<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  Verdict v = judge(result, eager, fp64, ToleranceRule{});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "nan_where_fp64_finite");
}

TEST(Verdict, EagerNaNIsForgivenWhenResultAgreesWithFp64) {
  at::Tensor fp64 = at::linspace(1.0, 2.0, 100, at::kDouble);
  at::Tensor eager = fp64.to(at::kFloat);
  eager.data_ptr<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  Verdict v = judge(fp64.to(at::kFloat), eager, fp64, ToleranceRule{});
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.reason, "eager_nan_fp64_agrees");
}

TEST(Verdict, IntegerOutputsMustMatchExactly) {
  at::Tensor a = at::tensor({1, 2, 3}, at::kLong);
  EXPECT_EQ(judge(a, a, at::Tensor(), ToleranceRule{}).reason, "exact_match");
  Verdict v = judge(at::tensor({1, 2, 4}, at::kLong), a, at::Tensor(), ToleranceRule{});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "exact_mismatch");
}

TEST(Verdict, LowPrecisionAndSmallTensorsGetTheLargerMultiplier) {
  at::Tensor fp64 = at::linspace(0.0, 10.0, 2000, at::kDouble);
  at::Tensor eager = (fp64 + 0.01).to(at::kBFloat16);
  Verdict v = judge((fp64 - 0.05).to(at::kBFloat16), eager, fp64, ToleranceRule{});
  EXPECT_DOUBLE_EQ(v.multiplier, 3);
  ToleranceRule opt_in;
  opt_in.small_tensor_multipliers = true;
  at::Tensor small = at::linspace(0.0, 1.0, 8, at::kDouble);
  Verdict s = judge((small + 0.5).to(at::kFloat), (small + 0.01).to(at::kFloat), small, opt_in);
  EXPECT_DOUBLE_EQ(s.multiplier, 10);
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

TEST(VerdictRules, OtherRulesJudgeAgainstFp64Alone) {
  at::Tensor fp64 = at::arange(1, 101, at::kDouble).div(7);
  at::Tensor close = fp64.to(at::kFloat);                // fp32 rounding: <= 0.5 ulp
  at::Tensor off = fp64.mul(1.01).to(at::kFloat);        // 1% off
  ToleranceRule ulp = parse_rule("ulp:1");
  EXPECT_TRUE(judge(close, close, fp64, ulp).pass);
  Verdict bad = judge(off, close, fp64, ulp);
  EXPECT_FALSE(bad.pass);
  EXPECT_EQ(bad.reason, "ulp_exceeds_bound");
  ToleranceRule allclose = parse_rule("allclose");
  EXPECT_EQ(judge(close, close, fp64, allclose).reason, "allclose_to_fp64");
  EXPECT_EQ(judge(off, close, fp64, allclose).reason, "not_allclose_to_fp64");
  ToleranceRule cosine = parse_rule("cosine:0.9999");
  EXPECT_TRUE(judge(off, close, fp64, cosine).pass);  // a uniform 1% scale keeps the direction
  EXPECT_EQ(judge(off.flip(0), close, fp64, cosine).reason, "cosine_below_bound");
  EXPECT_EQ(judge(off, close, at::Tensor(), cosine).reason, "fp64_unavailable");
}

// judge_measured() with the metrics a stage measured (measure(value, fp64), the value's own ULPs) gives judge()'s
// verdict field for field, for every rule, in each floating dtype, passing or failing; known_ulps() hands over
// only metrics in those ULPs.
TEST(JudgeMeasured, GivesJudgesVerdictFromTheCallersMetrics) {
  const at::Tensor fp64 = at::linspace(-3, 5, 997, at::kDouble).sin().mul(at::linspace(0.1, 40, 997, at::kDouble));
  const std::vector<std::string> specs = {"same", "allclose", "ulp:1", "ulp:8", "cosine", "cosine:0.99999", "relative"};
  std::set<ToleranceRule::Kind> kinds;
  size_t judged = 0, failed = 0;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const at::Tensor eager = fp64.to(dtype);
    for (double scale : {1.0, 1.0001, 1.03}) {
      const at::Tensor result = fp64.mul(scale).to(dtype);
      const Metrics r = measure(result, fp64), e = measure(eager, fp64);
      for (const std::string& spec : specs) {
        const ToleranceRule rule = parse_rule(spec);
        kinds.insert(rule.kind);
        const Verdict a = judge(result, eager, fp64, rule);
        const Verdict b = judge_measured(result, eager, fp64, rule, &r, &e);
        SCOPED_TRACE(spec + " " + std::string(c10::toString(dtype)) + " x" + std::to_string(scale));
        EXPECT_EQ(a.pass, b.pass);
        EXPECT_EQ(a.reason, b.reason);
        EXPECT_EQ(a.detail, b.detail);
        EXPECT_EQ(a.level, b.level);
        EXPECT_EQ(a.rmse_result, b.rmse_result);
        EXPECT_EQ(a.rmse_eager, b.rmse_eager);
        EXPECT_EQ(a.error_ratio, b.error_ratio);
        EXPECT_EQ(a.bound, b.bound);
        EXPECT_EQ(a.blind_spot, b.blind_spot);
        ++judged;
        failed += !a.pass;
      }
    }
  }
  EXPECT_EQ(kinds.size(), rule_kinds().size());  // every rule
  EXPECT_GT(failed, 0u);                          // the 3% error fails some: both outcomes compared
  EXPECT_GT(judged, failed);
  const Metrics m;
  EXPECT_EQ(known_ulps(m, std::nullopt, at::kBFloat16), &m);
  EXPECT_EQ(known_ulps(m, at::kBFloat16, at::kBFloat16), &m);
  EXPECT_EQ(known_ulps(m, at::kBFloat16, at::kFloat), nullptr);  // a cast's working precision: other ULPs
}

}  // namespace
}  // namespace pt2diff
