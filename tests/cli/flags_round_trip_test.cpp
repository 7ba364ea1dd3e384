// tests/cli/flags_round_trip_test.cpp — every option the CLI parses into DiffOptions is written back by
// to_flags() and parses to the same options again (the repro command is built from to_flags()).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "../test_support.h"
#include "engine/cli/command.h"
#include "pt2diff/option_table.h"

namespace pt2diff {
namespace {

using testing::fixture;

DiffOptions parse(const Program& program, const std::vector<std::string>& args) {
  CLI::App app;
  cli::GraphOptions graph;
  cli::InputOptions inputs;
  cli::TableOptions table;
  graph.add_to(app, /*required=*/false);
  inputs.add_to(app);
  table.add_to(app, kDiffCommand);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a vector back to front
  app.parse(reversed);
  return table.get(program);
}

void expect_same(const DiffOptions& a, const DiffOptions& b) {
  EXPECT_EQ(a.compiled, b.compiled);
  EXPECT_EQ(a.backend.device, b.backend.device);
  EXPECT_EQ(a.reference_device, b.reference_device);
  EXPECT_EQ(a.gpu_memory, b.gpu_memory);
  EXPECT_EQ(a.backend.inductor_config, b.backend.inductor_config);
  EXPECT_EQ(a.backend.matmul_precision, b.backend.matmul_precision);
  EXPECT_EQ(a.backend.no_tf32, b.backend.no_tf32);
  EXPECT_EQ(a.backend.timeout_seconds, b.backend.timeout_seconds);
  EXPECT_EQ(a.backend.python, b.backend.python);
  EXPECT_EQ(a.backend.op_libraries, b.backend.op_libraries);
  EXPECT_EQ(a.backend.seed, b.backend.seed);
  EXPECT_EQ(rule_name(a.rule), rule_name(b.rule));
  EXPECT_EQ(a.rule.tol, b.rule.tol);
  EXPECT_EQ(a.rule.fp32_multiplier, b.rule.fp32_multiplier);
  EXPECT_EQ(a.rule.low_precision_multiplier, b.rule.low_precision_multiplier);
  EXPECT_EQ(a.rule.small_tensor_multipliers, b.rule.small_tensor_multipliers);
  EXPECT_EQ(a.rule.suspicious_ratio, b.rule.suspicious_ratio);
  EXPECT_EQ(a.rule.node_ratio, b.rule.node_ratio);
  EXPECT_EQ(a.rule.node_fail_ratio, b.rule.node_fail_ratio);
  EXPECT_EQ(a.fail_on_suspicious, b.fail_on_suspicious);
  EXPECT_EQ(a.localize_suspicious, b.localize_suspicious);
  EXPECT_EQ(a.exploded, b.exploded);
  EXPECT_EQ(a.localize.enabled, b.localize.enabled);
  EXPECT_EQ(a.localize.search, b.localize.search);
  EXPECT_EQ(a.localize.max_compiles, b.localize.max_compiles);
  EXPECT_EQ(a.localize.repeats, b.localize.repeats);
  EXPECT_EQ(a.top, b.top);
  EXPECT_EQ(a.workaround.enabled, b.workaround.enabled);
  EXPECT_EQ(a.workaround.max_compiles, b.workaround.max_compiles);
  EXPECT_EQ(a.max_memory, b.max_memory);
}

std::set<std::string> flag_names(const std::vector<std::string>& args) {
  std::set<std::string> names;
  for (const std::string& a : args)
    if (a.rfind("--", 0) == 0) names.insert(a);
  return names;
}

TEST(FlagsRoundTrip, EveryOptionIsWrittenBackAndParsesTheSame) {
  const Program program = load_program(fixture("mlp.pt2"));
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"--compiled", "fault:aten.mm#2:noise=0.001", "--inductor-config", "emulate_precision_casts=True", "--inductor-config",
       "max_autotune=False", "--matmul-precision", "high", "--no-tf32", "--timeout", "12.5", "--worker-python", "/usr/bin/python3",
       "--load-library", "/opt/ops/libmy_ops.so", "--load-library", "/opt/ops/libother.so", "--seed", "7", "--rule", "allclose",
       "--tol", "1.5e-06", "--fp32-multiplier", "2.5", "--low-precision-multiplier", "4", "--small-tensor-multipliers",
       "--no-exploded", "--no-localize", "--bisect", "linear", "--max-compiles", "9", "--repeats", "3", "--top", "4", "--max-memory", "1.5G"},
      {"--compiled", "inductor", "--device", "cuda:1", "--rule", "ulp:4", "--max-memory", "none", "--reference-device", "cpu",
       "--gpu-memory", "40G"},
      {"--compiled", "eager", "--device", "cuda", "--reference-device", "cuda", "--gpu-memory", "none"},
      {"--compiled", "external:python3 my worker.py --flag", "--device", "cuda", "--rule", "cosine:0.95"},
      {"--rule", "relative", "--suspicious-ratio", "250", "--fail-on-suspicious", "--localize-suspicious"},
      {"--suspicious-ratio", "0"},
      {"--node-ratio", "6", "--node-fail-ratio", "24"},
      {"--node-ratio", "0"},
      {"--workaround", "--workaround-max-compiles", "7"},
      {"--search-compiler", "--search-compiler-max-compiles", "12"},
      {"--no-search-compiler"},
  };
  for (const auto& args : cases) {
    const DiffOptions first = parse(program, args);
    const std::vector<std::string> written = to_flags(first, default_device(program));
    SCOPED_TRACE(shell_line(written));
    // Nothing given is dropped (--compiled is always written; --device only where it is not the default).
    std::set<std::string> given = flag_names(args), back = flag_names(written);
    for (const std::string& name : given) EXPECT_TRUE(back.count(name)) << name << " was not written back";
    expect_same(first, parse(program, written));
  }
}

// Every row of the option table at its example value at once: a new row is covered without touching this test.
TEST(FlagsRoundTrip, EveryRowOfTheTableAtItsExampleIsWrittenBackAndParsesTheSame) {
  const Program program = load_program(fixture("mlp.pt2"));
  std::vector<std::string> args;
  for (const OptionSpec& spec : option_table()) {
    if (!(spec.commands & kDiffCommand)) continue;
    args.push_back(spec.flag);
    if (spec.kind != OptionKind::Switch && spec.kind != OptionKind::NegatedSwitch) args.push_back(spec.example);
  }
  const DiffOptions first = parse(program, args);
  const DiffOptions defaults;
  for (const OptionSpec& spec : option_table()) {
    if (!(spec.commands & kDiffCommand)) continue;
    SCOPED_TRACE(spec.flag);
    EXPECT_NE(option_text(spec, spec.get(first)), option_text(spec, spec.get(defaults))) << "the example is the default";
  }
  const std::vector<std::string> written = to_flags(first, default_device(program));
  SCOPED_TRACE(shell_line(written));
  for (const OptionSpec& spec : option_table()) {
    if (spec.commands & kDiffCommand) {
      EXPECT_EQ(std::count(written.begin(), written.end(), std::string(spec.flag)), spec.written ? 1 : 0) << spec.flag;
    }
  }
  const DiffOptions second = parse(program, written);
  expect_same(first, second);
  for (const OptionSpec& spec : option_table()) {
    if (spec.written && (spec.commands & kDiffCommand)) {
      EXPECT_TRUE(spec.get(first) == spec.get(second)) << spec.flag;
    }
  }
}

TEST(FlagsRoundTrip, ShellLineQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_line({"pt2diff", "a b.pt2", "--compiled", "fault:aten.bmm#1:bf16", "--tol", "1e-06", "it's"}),
            "pt2diff 'a b.pt2' --compiled 'fault:aten.bmm#1:bf16' --tol 1e-06 'it'\\''s'");
}

}  // namespace
}  // namespace pt2diff
