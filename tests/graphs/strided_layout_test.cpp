// tests/graphs/strided_layout_test.cpp — layouts read from files are checked in 128 bits: the
// overflows a mutation fuzzer fed the weights config (issue 20) are named, not passed to libtorch.
#include <gtest/gtest.h>

#include "graphs/strided_layout.h"

namespace pt2diff {
namespace {

TEST(StridedLayout, ReachIsWhatTheLastElementNeeds) {
  // A float32 [4, 8] view at offset 2 of a transposed [8, 4]: strides (1, 4).
  LayoutCheck c = check_layout({{4, 8}, {1, 4}, 2, 4});
  ASSERT_FALSE(c.problem) << *c.problem;
  EXPECT_EQ(c.numel, 32);
  EXPECT_EQ(c.needed_bytes, (2 + 3 * 1 + 7 * 4 + 1) * 4);
  EXPECT_EQ(check_layout({{3, 0, 5}, {100, 1, 1}, 7, 8}).needed_bytes, 0);  // empty: reads nothing
  EXPECT_EQ(check_layout({{}, {}, 5, 2}).needed_bytes, 12);                 // a scalar at offset 5
  EXPECT_EQ(check_layout({{1 << 20}, {0}, 0, 4}).needed_bytes, 4);          // an expanded scalar
}

TEST(StridedLayout, EveryOverflowTheFuzzerFoundIsNamed) {
  struct Case {
    StridedLayout layout;
    const char* says;
  };
  const int64_t big = int64_t{1} << 31;
  for (const Case& k : std::vector<Case>{
           {{{big, big}, {big, 1}, 0, 8}, "2^62 elements"},                   // sizes [2^31, 2^31] in fp64
           {{{4}, {1}, int64_t{1} << 62, 4}, "storage offset"},             // storage offset 2^62
           {{{4, 4}, {4, -1}, 0, 4}, "negative stride"},
           {{{4, 4}, {4}, 0, 4}, "2 sizes but 1 strides"},
           {{{-3}, {1}, 0, 4}, "negative size"},
           {{{4}, {1}, -1, 4}, "negative storage offset"},
           {{{INT64_MIN}, {1}, 0, 4}, "negative size"},                       // not representable as a SymInt
           {{{int64_t{1} << 40, int64_t{1} << 40}, {1, 1}, 0, 4}, "more than 2^62 elements"},
           {{{2}, {int64_t{1} << 61}, 0, 8}, "2^62"},
       }) {
    LayoutCheck c = check_layout(k.layout);
    ASSERT_TRUE(c.problem) << k.says;
    EXPECT_NE(c.problem->find(k.says), std::string::npos) << *c.problem;
  }
}

}  // namespace
}  // namespace pt2diff
