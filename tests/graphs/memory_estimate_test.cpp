// tests/graphs/memory_estimate_test.cpp — the pieces of --max-memory that need no graph: sizes read and
// written as users type and read them.
#include <gtest/gtest.h>

#include "graphs/memory_estimate.h"

namespace pt2diff {
namespace {

TEST(ByteSizes, ReadAsUsersWriteThem) {
  EXPECT_EQ(parse_byte_size("16G"), int64_t{16} << 30);
  EXPECT_EQ(parse_byte_size("16GiB"), int64_t{16} << 30);
  EXPECT_EQ(parse_byte_size("16gb"), int64_t{16} << 30);
  EXPECT_EQ(parse_byte_size("1.5T"), int64_t{3} << 39);
  EXPECT_EQ(parse_byte_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("800K"), 800 * 1024);
  EXPECT_EQ(parse_byte_size("1000000"), 1000000);
  EXPECT_EQ(parse_byte_size("none"), -1);
  for (const char* bad : {"", "G", "16Q", "-4G", "0", "1e30G", "16 G", "lots"}) EXPECT_FALSE(parse_byte_size(bad)) << bad;
}

TEST(ByteSizes, WrittenInBinaryUnits) {
  EXPECT_EQ(format_bytes(800), "800 B");
  EXPECT_EQ(format_bytes(10 * 1024), "10.0 KiB");
  EXPECT_EQ(format_bytes(1.5 * (1 << 30)), "1.5 GiB");
  EXPECT_EQ(format_bytes(16.0 * (int64_t{1} << 40)), "16.0 TiB");
}

TEST(ByteSizes, TheMemoryAvailableIsReadOnLinux) {
  const auto available = available_memory();
  ASSERT_TRUE(available);  // /proc/meminfo has MemAvailable since Linux 3.14
  EXPECT_GT(*available, int64_t{1} << 20);
}

}  // namespace
}  // namespace pt2diff
