// tests/graphs/pickle_scan_test.cpp — pickle nesting measured from opcodes, however it is built:
// bottom-up on the stack, top-down through the memo, or with a cycle.
#include <gtest/gtest.h>

#include <string>

#include "graphs/pickle_scan.h"

namespace pt2diff {
namespace {

/// A literal's bytes, NULs included.
template <size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

/// n empty lists on the stack, each appended into the one below: nested n deep, in a 1-tuple.
std::string nested_lists(size_t n) { return "\x80\x02" + repeat("]", n) + repeat("a", n - 1) + "\x85."; }

/// n lists memoized first, then linked top-down: list i gets list i + 1 after list i went into i - 1.
std::string memo_chain(size_t n) {
  std::string p = "\x80\x02";
  for (size_t i = 0; i < n; ++i) p += std::string("]r") + std::string(reinterpret_cast<const char*>(&i), 4) + "0";
  for (size_t i = 0; i + 1 < n; ++i) {
    const size_t j = i + 1;
    p += "j" + std::string(reinterpret_cast<const char*>(&i), 4) + "j" + std::string(reinterpret_cast<const char*>(&j), 4) + "a0";
  }
  return p + "j" + std::string(4, '\0') + ".";
}

TEST(PickleScan, MeasuresWhatTorchSaveWrites) {
  // torch.save((x,)) opcodes in outline: a 1-tuple holding _rebuild_tensor_v2(persistent storage, ...).
  std::string tensor_tuple = bytes("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n" "q\x00");
  tensor_tuple += bytes("((X\x07\x00\x00\x00" "storage" "q\x01" "ctorch\nFloatStorage\n" "q\x02");
  tensor_tuple += bytes("X\x01\x00\x00\x00" "0" "X\x03\x00\x00\x00" "cpu" "K\x80" "t" "q\x03" "Q");
  tensor_tuple += bytes("K\x00" "K\x04" "K\x20" "\x86" "K\x20" "K\x01" "\x86" "\x89");
  tensor_tuple += bytes("ccollections\nOrderedDict\n" ")Rt" "q\x04" "R" "q\x05" "\x85" "q\x06" ".");
  const PickleShape s = scan_pickle(tensor_tuple);
  ASSERT_FALSE(s.problem) << *s.problem;
  EXPECT_EQ(s.depth, 5u);  // tuple > reduce > args tuple > persistent id > its tuple
}

TEST(PickleScan, NestingBuiltOnTheStackIsCounted) {
  EXPECT_EQ(scan_pickle(nested_lists(10)).depth, 11u);
  const PickleShape deep = scan_pickle(nested_lists(200000));
  ASSERT_TRUE(deep.problem);
  EXPECT_NE(deep.problem->find("nested 200001 deep"), std::string::npos) << *deep.problem;
  EXPECT_FALSE(scan_pickle(nested_lists(kMaxPickleDepth - 1)).problem);
}

TEST(PickleScan, NestingBuiltThroughTheMemoIsCountedToo) {
  EXPECT_EQ(scan_pickle(memo_chain(5)).depth, 5u);
  EXPECT_TRUE(scan_pickle(memo_chain(5000)).problem);
}

TEST(PickleScan, DamageIsNamed) {
  EXPECT_NE(scan_pickle(bytes("\x80\x02]q\x00h\x00" "a.")).problem->find("contains itself"), std::string::npos);
  EXPECT_NE(scan_pickle("\x80\x02]]").problem->find("no STOP"), std::string::npos);
  EXPECT_NE(scan_pickle(bytes("\x80\x02X\xff\xff\x00\x00" "ab.")).problem->find("truncated"), std::string::npos);
  EXPECT_NE(scan_pickle("\x80\x02" "a.").problem->find("underflow"), std::string::npos);
  EXPECT_NE(scan_pickle("\x80\x02\xff.").problem->find("unknown opcode 0xff"), std::string::npos);
  EXPECT_NE(scan_pickle("\x80\x02h\x07.").problem->find("unknown entry"), std::string::npos);
}

}  // namespace
}  // namespace pt2diff
