// tests/engine/backends/aoti_guards_test.cpp — AOTI's input checklist, done by pt2diff before a package
// runs (engine/backends/aoti_guards.h): every violation one line naming the input, as the guards AOTI
// generates (check_inputs, AOTI_RUNTIME_CHECK_INPUTS=1) test them; the package's own messages named.
// The package end to end: test_aoti_package.py.
#include <gtest/gtest.h>

#include <ATen/ops/randn.h>

#include "../../test_support.h"
#include "engine/backends/aoti_guards.h"

namespace pt2diff {
namespace {

bool has(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

TEST(AotiGuards, InputsThatMatchTheProgramPass) {
  const Program p = load_program(testing::fixture("dynamic_batch.pt2"));  // x: float32[s77, 16], s77 in [2, 64]
  EXPECT_TRUE(package_guard_violations(p, {at::randn({6, 16})}, "cpu").empty());
  EXPECT_TRUE(package_guard_violations(p, {at::randn({64, 16})}, "cpu").empty());
}

TEST(AotiGuards, EveryViolationIsOneLineNamingTheInput) {
  const Program p = load_program(testing::fixture("dynamic_batch.pt2"));
  const auto range = package_guard_violations(p, {at::randn({65, 16})}, "cpu");
  ASSERT_EQ(range.size(), 1u);
  EXPECT_EQ(range[0], "input 'x' dim 0 is 65, outside the range [2, 64] the package was compiled for (symbol s77)");
  const auto static_dim = package_guard_violations(p, {at::randn({6, 15})}, "cpu");
  EXPECT_TRUE(has(static_dim, "input 'x' dim 1 is 15, the package was compiled for 16")) << static_dim.at(0);
  // Two at once (AOTI stops at the first): dtype and device.
  const auto two = package_guard_violations(p, {at::randn({6, 16}, at::kDouble)}, "cuda");
  EXPECT_EQ(two.size(), 2u);
  EXPECT_TRUE(has(two, "input 'x' is float64, the package was compiled for float32"));
  EXPECT_TRUE(has(two, "input 'x' is on cpu, the package was compiled for cuda"));
  const auto rank = package_guard_violations(p, {at::randn({6, 16, 1})}, "cpu");
  EXPECT_TRUE(has(rank, "input 'x' has 3 dims [6, 16, 1], the package was compiled for 2 dims")) << rank.at(0);
  EXPECT_TRUE(has(package_guard_violations(p, {}, "cpu"), "0 inputs given, the package takes 1"));
}

TEST(AotiGuards, StaticStridesAreChecked) {
  const Program p = load_program(testing::fixture("mlp.pt2"));  // x: float32[4, 32], strides [32, 1]
  const auto t = package_guard_violations(p, {at::randn({32, 4}).t()}, "cpu");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(has(t, "input 'x' has strides [1, 4], the package was compiled for [32, 1]")) << t[0];
}

TEST(AotiGuards, ThePackagesOwnMessageNamesTheInput) {
  const Program p = load_program(testing::fixture("mlp.pt2"));
  EXPECT_EQ(name_package_guard_failure("input_handles[0]: unmatched dim value at 0, expected: 4, but got: 8", p),
            "input 'x' (input_handles[0]): unmatched dim value at 0, expected: 4, but got: 8");
  EXPECT_EQ(name_package_guard_failure("input_handles[3]: out of range", p), "input_handles[3]: out of range");
  EXPECT_EQ(name_package_guard_failure("something else", p), "something else");
}

}  // namespace
}  // namespace pt2diff
