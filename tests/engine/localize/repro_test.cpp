// tests/engine/localize/repro_test.cpp — the repro a localization writes reproduces its verdict: the
// window alone, exported, fed its boundary values, diverges again at the same op.
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../test_support.h"

namespace pt2diff {
namespace {

using testing::fixture;

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

TEST(Repro, TheWrittenWindowDivergesAgainAtTheSameOp) {
  testing::ScratchDir scratch("repro_attention");
  const std::string dir = scratch.file("repro"), report = scratch.file("report.json");
  auto r = testing::run_cli(fmt::format("{} {} --compiled 'fault:aten.bmm#2:bf16' --repro {} --json {}", fixture("attention_core.pt2"),
                                        fixture("attention_inputs.pt"), dir, report));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json loc = read_json(report)["localization"];
  ASSERT_EQ(loc["culprit"]["nodes"], nlohmann::json::array({"bmm_1"}));
  ASSERT_TRUE(loc["repro"]["ok"]) << loc["repro"]["message"];
  const std::string command = loc["repro"]["command"];
  EXPECT_EQ(command.rfind("pt2diff " + dir + "/repro.pt2 " + dir + "/repro_inputs.pt --compiled 'fault:aten.bmm#1:bf16'", 0), 0u)
      << command;
  EXPECT_TRUE(std::filesystem::exists(dir + "/README.md"));
  EXPECT_NE(r.out.find("repro: " + command), std::string::npos);

  // Run it: the window alone diverges, localized to its bmm.
  const std::string again = dir + "/again.json";
  auto rerun = testing::run_cli(command.substr(std::string("pt2diff ").size()) + " --json " + again);
  EXPECT_EQ(rerun.exit_code, 1) << rerun.out << rerun.err;
  nlohmann::json rloc = read_json(again)["localization"];
  EXPECT_EQ(rloc["culprit"]["kind"], "single_op");
  EXPECT_EQ(rloc["culprit"]["ops"], nlohmann::json::array({"aten.bmm.default"}));
}

TEST(Repro, TheCommandKeepsEveryOptionThatShapesTheVerdict) {
  // A non-default rule, tolerance, multiplier and seed: the repro judges as the run that wrote it did.
  testing::ScratchDir scratch("repro_options");
  const std::string dir = scratch.file("repro"), report = scratch.file("report.json");
  auto r = testing::run_cli(fmt::format("{} {} --compiled 'fault:aten.bmm#2:noise=0.05' --rule allclose --tol 1e-05 "
                                        "--fp32-multiplier 3 --seed 5 --repro {} --json {}",
                                        fixture("attention_core.pt2"), fixture("attention_inputs.pt"), dir, report));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json loc = read_json(report)["localization"];
  ASSERT_TRUE(loc["repro"]["ok"]) << loc["repro"]["message"];
  const std::string command = loc["repro"]["command"];
  EXPECT_EQ(command, "pt2diff " + dir + "/repro.pt2 " + dir + "/repro_inputs.pt --compiled 'fault:aten.bmm#1:noise=0.05' --seed 5 "
                     "--rule allclose --tol 1e-05 --fp32-multiplier 3");
  auto rerun = testing::run_cli(command.substr(std::string("pt2diff ").size()) + " --json " + scratch.file("again.json"));
  EXPECT_EQ(rerun.exit_code, 1) << rerun.out << rerun.err;
  nlohmann::json again = read_json(scratch.file("again.json"));
  EXPECT_EQ(again["tolerance"]["rule"], "allclose") << again["tolerance"];
  EXPECT_EQ(again["tolerance"]["tol"], 1e-05);
  EXPECT_EQ(again["tolerance"]["fp32_multiplier"], 3.0);
  EXPECT_EQ(again["localization"]["culprit"]["ops"], nlohmann::json::array({"aten.bmm.default"}));
}

TEST(Repro, AGpuExportsWindowIsWrittenForTheCpuWithItsMathAttention) {
  // Here (no CUDA) the window of a graph exported on cuda:0 is exported on the CPU, where its fused
  // attention is math attention: the fault spec follows the op, and the repro diverges there again.
  testing::ScratchDir scratch("repro_cuda_attention");
  const std::string dir = scratch.file("repro"), report = scratch.file("report.json");
  auto r = testing::run_cli(fmt::format("{} {} --compiled fault:_scaled_dot_product_efficient_attention:scale=0.05 --repro {} --json {}",
                                        fixture("cuda/attention_cuda_fp32.pt2"), fixture("cuda/attention_cuda_fp32_inputs.pt"), dir,
                                        report));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  nlohmann::json loc = read_json(report)["localization"];
  ASSERT_EQ(loc["culprit"]["nodes"], nlohmann::json::array({"_scaled_dot_product_efficient_attention"}));
  ASSERT_TRUE(loc["repro"]["ok"]) << loc["repro"]["message"];
  const std::string command = loc["repro"]["command"];
  EXPECT_EQ(command, "pt2diff " + dir + "/repro.pt2 " + dir + "/repro_inputs.pt --compiled 'fault:aten._scaled_dot_product_attention_math#1:scale=0.05'");
  const std::string again = dir + "/again.json";
  auto rerun = testing::run_cli(command.substr(std::string("pt2diff ").size()) + " --json " + again);
  EXPECT_EQ(rerun.exit_code, 1) << rerun.out << rerun.err;
  nlohmann::json rloc = read_json(again)["localization"];
  EXPECT_EQ(rloc["culprit"]["ops"], nlohmann::json::array({"aten._scaled_dot_product_attention_math.default"}));
}

}  // namespace
}  // namespace pt2diff
