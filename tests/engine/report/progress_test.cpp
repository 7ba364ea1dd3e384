// tests/engine/report/progress_test.cpp — the status line: elapsed time, an ETA once a compile of the
// same kind has been seen, nothing at all when the output is not a terminal.
#include <cstdio>
#include <gtest/gtest.h>
#include <string>

#include "../../test_support.h"
#include "engine/report/progress.h"

namespace pt2diff {
namespace {

std::string drawn(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  return out;
}

TEST(Progress, ShowsElapsedThenAnEtaFromTheLastCompileOfTheSameKind) {
  std::FILE* f = std::tmpfile();
  {
    TerminalProgress p(f, /*force=*/true);
    p.on_wait("compiling 10 nodes, a .. b", 1);
    p.on_wait("compiling 10 nodes, a .. b", 4);    // took ~4 s: 0.4 s per node
    p.on_wait("compiling 20 nodes exploded, a .. c", 2);
  }
  const std::string out = drawn(f);
  EXPECT_NE(out.find("compiling 10 nodes, a .. b: 4 s"), std::string::npos) << out;
  EXPECT_EQ(out.find("compiling 10 nodes, a .. b: 1 s, ETA"), std::string::npos) << "no estimate without history";
  EXPECT_NE(out.find("compiling 20 nodes exploded, a .. c: 2 s, ETA ~6 s"), std::string::npos) << out;
  std::fclose(f);
}

TEST(Progress, SilentWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  {
    TerminalProgress p(f);
    p.on_wait("compiling 3 nodes", 1);
  }
  EXPECT_EQ(drawn(f), "");
  std::fclose(f);
  // The CLI in a pipe: the report only, no carriage returns.
  auto r = testing::run_cli(testing::fixture("mlp.pt2") + " --no-exploded");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace pt2diff
