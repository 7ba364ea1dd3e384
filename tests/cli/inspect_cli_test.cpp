// tests/cli/inspect_cli_test.cpp — `pt2diff inspect` on every fixture, text and JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../test_support.h"

namespace pt2diff {
namespace {

using testing::base_name;
using testing::fixture;
using testing::run_cli;

class InspectEveryFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(InspectEveryFixture, PrintsASummaryAndBindsTheInputs) {
  const std::string name = GetParam();
  auto r = run_cli("inspect " + fixture(name + ".pt2") + " " + fixture(base_name(name) + "_inputs.pt"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("inputs bind: yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsupported ops: none"), std::string::npos) << r.out;

  auto j = run_cli("inspect --json " + fixture(name + ".pt2"));
  ASSERT_EQ(j.exit_code, 0) << j.err;
  nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_GT(doc["nodes"].get<int>(), 0);
  EXPECT_TRUE(doc["binding"]["ok"].get<bool>()) << "sample inputs bind";
  EXPECT_EQ(doc["binding"]["origin"], "sample inputs");
  int64_t counted = 0;
  for (const auto& op : doc["ops"]) counted += op["count"].get<int64_t>();
  EXPECT_EQ(counted, doc["nodes"].get<int64_t>());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InspectEveryFixture,
                         ::testing::ValuesIn(testing::runnable_fixtures()),
                         [](const auto& info) { return info.param; });

TEST(InspectCli, ShowsWhatAUserNeedsForTheMlp) {
  auto r = run_cli("inspect " + fixture("mlp.pt2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"graph: 3 nodes", "x     user_input", "float32[4, 32]", "linear_1", "4 parameters",
                           "2  aten.linear.default", "dispatcher", "inputs bind: yes (sample inputs: x = float32[4, 32] cpu)"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

TEST(InspectCli, ShowsSubgraphsDynamicDimsAndSpecializedScalars) {
  auto cond = run_cli("inspect " + fixture("cond.pt2"));
  EXPECT_NE(cond.out.find("in 2 subgraphs"), std::string::npos) << cond.out;
  EXPECT_NE(cond.out.find("higher_order.cond"), std::string::npos) << cond.out;
  auto dyn = run_cli("inspect " + fixture("dynamic_batch.pt2"));
  EXPECT_NE(dyn.out.find("float32[s77, 16]"), std::string::npos) << dyn.out;
  EXPECT_NE(dyn.out.find("dynamic dims: s77 in [2, 64]"), std::string::npos) << dyn.out;
  auto temp = run_cli("inspect " + fixture("ln_softmax_gelu.pt2"));
  EXPECT_NE(temp.out.find("temperature  constant_input   specialized to 0.5"), std::string::npos) << temp.out;
}

TEST(InspectCli, ListsOpsNothingCanRunWithTheirNodes) {
  auto r = run_cli("inspect " + fixture("python_only_ops.pt2"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unsupported ops (1): pt2diff cannot run these nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pt2diff_fixtures.scaled_tanh.default ×1: not in the C++ dispatcher: a custom op defined in Python"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(nodes: scaled_tanh)"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(run_cli("inspect --json " + fixture("python_only_ops_core.pt2")).out);
  ASSERT_EQ(j["unsupported"].size(), 1u);
  EXPECT_EQ(j["unsupported"][0]["target"], "torch.ops.pt2diff_fixtures.scaled_tanh.default");
  EXPECT_EQ(j["unsupported"][0]["nodes"][0], "scaled_tanh");
}

TEST(InspectCli, RandomInputsBindWithTheirSeed) {
  auto r = run_cli("inspect " + fixture("dynamic_batch.pt2") + " --random-inputs --seed 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("inputs bind: yes (random (seed 3): x = float32[6, 16] cpu)"), std::string::npos) << r.out;
}

TEST(InspectCli, PrintsTheGraphOnRequest) {
  auto r = run_cli("inspect --graph " + fixture("multi_output_core.pt2"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("%getitem: float32[5], %getitem_1: int64[5] = aten.max.dim(%x, 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten.split_with_sizes.default(%x, [2, 3, 3], 1)"), std::string::npos) << r.out;
}

// Archives of other torch versions with their inputs: tests/engine/load/torch_versions_test.cpp.

}  // namespace
}  // namespace pt2diff
