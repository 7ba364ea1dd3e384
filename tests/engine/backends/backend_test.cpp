// tests/engine/backends/backend_test.cpp — backends without a compiler: eager and planted faults,
// exploded regions, and compiler workers that crash, hang, fail or talk nonsense.
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/isnan.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../test_support.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/diff.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {
namespace {

using testing::fixture;

struct Loaded {
  Program program;
  BoundInputs inputs;
  explicit Loaded(const std::string& name)
      : program(load_program(fixture(name + ".pt2"))),
        inputs(bind_inputs(program, load_inputs(fixture(testing::base_name(name) + "_inputs.pt")))) {}

  std::vector<c10::IValue> whole_inputs(const RegionSpec& r) const {
    auto all = graph_input_values(program, inputs);
    std::vector<c10::IValue> out;
    for (ValueId v : r.inputs) out.push_back(all[static_cast<size_t>(v)]);
    return out;
  }
  /// The whole graph through `spec`'s backend.
  std::vector<c10::IValue> run(const std::string& spec) const {
    auto backend = make_backend(spec, program, {});
    RegionSpec whole = RegionSpec::whole_graph(program.ir);
    return backend->compile(whole, whole_inputs(whole))->run(whole_inputs(whole));
  }
};

std::string usage_error(const std::string& spec) {
  Loaded m("mlp");
  try {
    make_backend(spec, m.program, {});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Usage) << spec;
    return e.what();
  }
  ADD_FAILURE() << spec << " was accepted";
  return "";
}

TEST(EagerBackend, WholeGraphEqualsTheInterpreterBitForBit) {
  for (const char* name : {"mlp", "bf16_block", "cond", "multi_output_core"}) {
    Loaded m(name);
    auto compiled = m.run("eager");
    RunResult native = Interpreter(m.program).run(m.inputs);
    RegionSpec whole = RegionSpec::whole_graph(m.program.ir);
    for (size_t i = 0; i < whole.outputs.size(); ++i) {
      auto outs = m.program.ir.graph.output_values();
      size_t k = static_cast<size_t>(std::find(outs.begin(), outs.end(), whole.outputs[i]) - outs.begin());
      EXPECT_TRUE(at::equal(compiled[i].toTensor(), native.outputs[k].toTensor())) << name << " output " << i;
    }
  }
}

TEST(EagerBackend, ExplodedRegionReproducesTheLocalRunOfEveryNode) {
  Loaded m("bf16_block");
  const Graph& g = m.program.ir.graph;
  Interpreter interpreter(m.program);
  std::vector<c10::IValue> rounded = graph_input_values(m.program, m.inputs);
  std::map<std::string, at::Tensor> local;
  interpreter.run_lockstep(m.inputs, [&](const NodeStep& s) {
    auto outs = s.node.output_values();
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!s.fp64[i].isTensor()) continue;
      rounded[static_cast<size_t>(outs[i])] = s.fp64[i].toTensor().to(s.native[i].toTensor().scalar_type());
      local[g.value(outs[i]).name] = s.local[i].toTensor();
    }
  });
  std::vector<NodeId> all;
  for (const Node& n : g.nodes()) all.push_back(n.id);
  RegionSpec ops = RegionSpec::exploded_ops(g, all);
  std::vector<c10::IValue> in;
  for (ValueId v : ops.inputs) in.push_back(rounded[static_cast<size_t>(v)]);
  auto out = interpreter.run_region(ops, in);
  ASSERT_EQ(out.size(), ops.outputs.size());
  size_t compared = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = local.find(g.value(ops.outputs[i]).name);
    if (it == local.end()) continue;
    EXPECT_TRUE(at::equal(out[i].toTensor(), it->second)) << it->first;
    ++compared;
  }
  EXPECT_GE(compared, 8u);
}

TEST(FaultBackend, EveryKindIsDeterministicAndChangesTheOutput) {
  Loaded m("mlp");
  const at::Tensor eager = m.run("eager").at(0).toTensor();
  for (const char* kind : {"scale=0.1", "noise=0.05", "bf16", "reorder", "nan"}) {
    const std::string spec = fmt::format("fault:linear:{}", kind);
    const at::Tensor a = m.run(spec).at(0).toTensor(), b = m.run(spec).at(0).toTensor();
    EXPECT_TRUE(at::equal(a, b) || (a.isnan().any().item<bool>() && a.isnan().equal(b.isnan()))) << spec << " is not deterministic";
    EXPECT_FALSE(at::equal(a, eager)) << spec << " changed nothing";
  }
  // scale multiplies the faulted node's output by exactly (1 + d) before the next op reads it.
  Loaded last("mlp");
  const at::Tensor scaled = last.run("fault:linear_1:scale=0.5").at(0).toTensor();
  EXPECT_TRUE(at::equal(scaled, eager.mul(1.5)));
  // reorder is the same math in another order: close to eager, not equal.
  const at::Tensor reordered = m.run("fault:aten.linear#1:reorder").at(0).toTensor();
  EXPECT_TRUE(at::allclose(reordered, eager, 1e-5, 1e-6));
}

TEST(FaultBackend, NamesNodesByNameOrByOpOccurrence) {
  Loaded m("mlp");
  EXPECT_TRUE(at::equal(m.run("fault:linear_1:bf16").at(0).toTensor(), m.run("fault:aten.linear.default#2:bf16").at(0).toTensor()));
  EXPECT_TRUE(at::equal(m.run("fault:linear_1:bf16").at(0).toTensor(), m.run("fault:linear#2:bf16").at(0).toTensor()));
}

TEST(FaultBackend, BadSpecsSayWhatIsWrong) {
  EXPECT_NE(usage_error("fault:nosuchnode:scale").find("no node named 'nosuchnode' (nodes: linear, relu, linear_1)"), std::string::npos);
  EXPECT_NE(usage_error("fault:linear:explode").find("unknown kind 'explode'"), std::string::npos);
  EXPECT_NE(usage_error("fault:relu:reorder").find("aten.relu.default, which has no reduction"), std::string::npos);
  EXPECT_NE(usage_error("fault:aten.linear#3:nan").find("has 2 nodes of op 'linear', not 3"), std::string::npos);
  EXPECT_NE(usage_error("fault:linear:scale=abc").find("amount 'abc' is not a number"), std::string::npos);
  EXPECT_NE(usage_error("fault:linear").find("no KIND"), std::string::npos);
  EXPECT_NE(usage_error("frobnicate").find("unknown backend 'frobnicate'"), std::string::npos);
  EXPECT_NE(usage_error("aoti:/no/such/package.pt2").find("no such file"), std::string::npos);
}

TEST(FaultBackend, DiffBlamesThePlantedNode) {
  Loaded m("attention_core");
  for (const char* where : {"bmm", "aten.bmm#2", "add"}) {
    DiffOptions o;
    o.compiled = fmt::format("fault:{}:scale=0.05", where);
    DiffResult r = diff(m.program, m.inputs, o);
    EXPECT_TRUE(r.diverged) << where;
    ASSERT_FALSE(r.ranking.empty());
    const NodeError& top = r.nodes[r.ranking.front()];
    EXPECT_GT(top.compiled_local_ulp, 1000) << where;
    if (std::string(where) == "aten.bmm#2") EXPECT_EQ(top.name, "bmm_1");
    else EXPECT_EQ(top.name, where);
    for (const NodeError& n : r.nodes) {
      if (n.name != top.name) {
        EXPECT_EQ(n.compiled_local_ulp, n.local_ulp) << where << ": " << n.name;  // eager elsewhere
      }
    }
  }
}

// --- compiler workers that fail ------------------------------------------------------------------

std::string broken(const std::string& mode, const std::string& extra = "") {
  return fmt::format("external:{} {} {}{}", PT2DIFF_TEST_PYTHON, PT2DIFF_BROKEN_WORKER, mode, extra.empty() ? "" : " " + extra);
}

DiffResult diff_with(const std::string& spec, double timeout = 600) {  // a cold Inductor compile on a loaded 2-core machine
  Loaded m("mlp");
  DiffOptions o;
  o.compiled = spec;
  o.backend.timeout_seconds = timeout;
  return diff(m.program, m.inputs, o);
}

void expect_backend_failed(const DiffResult& r, const std::string& failure, const std::string& message) {
  ASSERT_FALSE(r.compiles.empty());
  EXPECT_TRUE(r.compiled_failed);
  EXPECT_STREQ(failure_kind_name(r.compiles.front().failure), failure.c_str()) << r.compiles.front().message;
  EXPECT_NE(r.compiles.front().message.find(message), std::string::npos) << r.compiles.front().message;
  // What eager and fp64 computed is kept: every node, every output with its eager error.
  EXPECT_EQ(r.nodes.size(), 3u);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].verdict.reason, "no_compiled_value");
  EXPECT_GT(r.outputs[0].eager_to_fp64.rmse, 0);
}

TEST(WorkerFailures, ACrashIsRestartedOnceThenReported) {
  DiffResult r = diff_with(broken("crash"));
  expect_backend_failed(r, "worker_died", "killed by signal 9");
  EXPECT_NE(r.compiles.front().message.find("about to die while compiling"), std::string::npos);  // its stderr, quoted
  EXPECT_EQ(r.compiles.size(), 1u);  // a worker that died twice is not asked for the exploded compile
}

TEST(WorkerFailures, AHangIsKilledAtTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  DiffResult r = diff_with(broken("hang"), 2);
  expect_backend_failed(r, "timed_out", "gave no answer within 2 s");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
}

TEST(WorkerFailures, ACompileErrorKeepsTheCompilersMessage) {
  DiffResult r = diff_with(broken("error"));
  expect_backend_failed(r, "compile_failed", "LoweringException: no lowering for aten.frobnicate");
  EXPECT_EQ(r.compiles.size(), 2u);  // the worker is alive: the exploded compile is still tried
}

TEST(WorkerFailures, GarbageAndOldProtocolsAreNamed) {
  expect_backend_failed(diff_with(broken("garbage")), "run_failed", "a line that is not JSON");
  expect_backend_failed(diff_with(broken("old_protocol")), "unusable", "speaks protocol 0, pt2diff speaks 1");
  expect_backend_failed(diff_with("external:/no/such/compiler"), "worker_died", "external worker died");
}

TEST(WorkerFailures, OneDeathIsSurvivedByARestart) {
  testing::ScratchDir scratch("crash_once");
  const std::string& state = scratch.path();
  DiffResult r = diff_with(broken("crash_once", state));
  ASSERT_FALSE(r.compiles.empty());
  EXPECT_TRUE(r.compiles.front().ok) << r.compiles.front().message;
  EXPECT_FALSE(r.compiled_failed);
  EXPECT_FALSE(r.diverged);
}

TEST(WorkerFailuresCli, ReportAndJsonAreWrittenAndTheExitCodeIs4) {
  testing::ScratchDir scratch("crash_report");
  const std::string json_path = scratch.file("crash_report.json");
  auto r = testing::run_cli(fmt::format("{} --compiled '{}' --json {}", fixture("mlp.pt2"), broken("crash"), json_path));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.out.find("COMPILER FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("pt2diff: the graph compile failed (worker_died): the external worker died while compiling 3 nodes"),
            std::string::npos) << r.err;
  std::ifstream f(json_path);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["verdict"], "compiler_failed");
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["compiles"][0]["failure"], "worker_died");
}

}  // namespace
}  // namespace pt2diff
