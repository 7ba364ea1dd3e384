// tests/engine/stage_table_test.cpp — the pipeline's stages are one table (engine/diff/pipeline.cpp: diff_stages());
// docs/architecture.md shows that table as it is.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/diff/stages.h"

namespace pt2diff {
namespace {

TEST(StageTable, IsTheArchitectureDocsTable) {
  std::ifstream in(std::string(PT2DIFF_FIXTURES) + "/../docs/architecture.md");
  ASSERT_TRUE(in) << "docs/architecture.md";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string want = stage_table_markdown();
  EXPECT_NE(doc.str().find(want), std::string::npos) << "docs/architecture.md's table of stages should read:\n" << want;
}

TEST(StageTable, TheCulpritsStagesComeLast) {
  bool from_culprit = false;
  for (const StageInfo& st : diff_stages()) {
    EXPECT_TRUE(!from_culprit || st.from_culprit) << st.name << " runs on the run's own job after the culprit's stages began";
    from_culprit = from_culprit || st.from_culprit;
    EXPECT_EQ(st.ahead == nullptr, std::string(st.ahead_what).empty()) << st.name;
  }
  EXPECT_TRUE(from_culprit);
}

}  // namespace
}  // namespace pt2diff
