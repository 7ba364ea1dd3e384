// tests/engine/backends/fault_injection_test.cpp — faults injected on the compiled side, through
// broken_worker.py: the worker killed at each request of the protocol, outputs that are truncated, of
// the wrong shape, dtype or count, or not torch.save files at all, a disk that fills up, answers slow
// and too slow. Each is reported with its failure kind, the report keeps what eager and fp64 computed,
// and nothing is left behind: no process of the worker's, no file of the engine's private directory.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <torch/csrc/jit/serialization/pickle.h>
#include <unistd.h>

#include "../../test_support.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/diff.h"

namespace pt2diff {
namespace {

using testing::fixture;

/// Whether `pid` is a live process (a zombie is dead: it only waits for its parent to reap it).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno != ESRCH;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

/// One run against broken_worker.py in one mode: the command that starts it, the outputs it is to
/// return, and what it recorded (every worker process and subprocess it started, the engine's private
/// directory each worker was given), to check that nothing of it is left afterwards.
class FaultRun {
 public:
  explicit FaultRun(const std::string& tag) : scratch_(tag) {}

  /// `--compiled` for `mode`. `exec`: the worker is the process the engine starts (not a shell's
  /// child), so that "no child process remains" is checked on the worker itself.
  std::string spec(const std::string& mode, double delay = 0) const {
    std::string env = fmt::format("BROKEN_WORKER_RECORD={}", record());
    if (!outputs_.empty()) env += fmt::format(" BROKEN_WORKER_OUTPUT={}", outputs_);
    if (delay > 0) env += fmt::format(" BROKEN_WORKER_DELAY={}", delay);
    return fmt::format("external:{} exec {} {} {}", env, PT2DIFF_TEST_PYTHON, PT2DIFF_BROKEN_WORKER, mode);
  }

  /// The worker is to return `values` (a torch.save tuple) from `run`.
  void returns(const std::vector<c10::IValue>& values) {
    outputs_ = scratch_.file("outputs.pt");
    const std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(values));
    std::ofstream(outputs_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  /// Lines "KIND PID [DIR LITTER]" the workers wrote, of one kind ("worker", "child").
  std::vector<std::vector<std::string>> recorded(const std::string& kind) const {
    std::vector<std::vector<std::string>> out;
    std::ifstream in(record());
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string s; words >> s;) w.push_back(s);
      if (!w.empty() && w[0] == kind) out.push_back(w);
    }
    return out;
  }
  size_t workers_started() const { return recorded("worker").size(); }

  /// Nothing left: no process the workers were or started is alive, the test process has no child
  /// (the worker, the engine's child when diff() runs here, is reaped as well), and every private
  /// directory the engine gave a worker, and what a worker left in its TMPDIR, is gone.
  void expect_no_leftovers() const {
    std::vector<std::vector<std::string>> all = recorded("worker"), children = recorded("child");
    ASSERT_FALSE(all.empty()) << "no worker recorded its start";
    all.insert(all.end(), children.begin(), children.end());
    for (const auto& w : all) {
      const pid_t pid = std::stoi(w.at(1));
      // SIGKILL to the process group is sent before diff() returns; a subprocess may take a moment to die.
      for (int i = 0; i < 40 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_FALSE(alive(pid)) << w[0] << " " << pid << " is still running";
      // The engine's private directory, and what the worker left in its TMPDIR (the worker's scratch).
      for (size_t k = 2; k < w.size(); ++k) EXPECT_FALSE(std::filesystem::exists(w[k])) << w[k] << " was left behind";
    }
    // The test process has no child left at all, running or waiting to be reaped.
    int status = 0;
    const pid_t left = waitpid(-1, &status, WNOHANG);
    const int error = errno;
    EXPECT_EQ(left, -1) << "child process " << left << " was left";
    EXPECT_EQ(error, ECHILD);
  }

  const testing::ScratchDir& scratch() const { return scratch_; }

 private:
  std::string record() const { return scratch_.file("record.txt"); }
  testing::ScratchDir scratch_;
  std::string outputs_;
};

struct Mlp {
  Program program = load_program(fixture("mlp.pt2"));
  BoundInputs inputs = bind_inputs(program, load_inputs(fixture("mlp_inputs.pt")));

  /// What eager computes for the whole-graph region, in its output order: what an honest worker returns.
  std::vector<c10::IValue> eager_outputs() const {
    RunResult native = Interpreter(program).run(inputs);
    const auto outs = program.ir.graph.output_values();
    std::vector<c10::IValue> values;
    for (ValueId v : RegionSpec::whole_graph(program.ir).outputs)
      values.push_back(native.outputs.at(static_cast<size_t>(std::find(outs.begin(), outs.end(), v) - outs.begin())));
    return values;
  }

  DiffResult diff_with(const std::string& spec, double timeout = 60, bool exploded = false) const {
    DiffOptions o;
    o.compiled = spec;
    o.backend.timeout_seconds = timeout;
    o.exploded = exploded;
    o.localize.enabled = false;
    return diff(program, inputs, o);
  }
};

/// The graph's compile (or run) failed with `kind`, in one line naming `problem`; what eager and fp64
/// computed is kept: every node, every output with its eager error and no compiled value.
void expect_failed(const DiffResult& r, const std::string& kind, const std::string& problem) {
  ASSERT_FALSE(r.compiles.empty());
  const CompileRecord& graph = r.compiles.front();
  ::testing::Test::RecordProperty("message", graph.message);  // in --gtest_output's file: docs' table
  EXPECT_FALSE(graph.ok);
  EXPECT_TRUE(r.compiled_failed);
  EXPECT_STREQ(failure_kind_name(graph.failure), kind.c_str()) << graph.message;
  EXPECT_NE(graph.message.find(problem), std::string::npos) << graph.message;
  EXPECT_EQ(graph.message.find('\n'), std::string::npos) << "not one line: " << graph.message;
  EXPECT_EQ(r.nodes.size(), 3u);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_FALSE(r.outputs[0].verdict.pass);
  EXPECT_EQ(r.outputs[0].verdict.reason, "no_compiled_value");
  EXPECT_GT(r.outputs[0].eager_to_fp64.rmse, 0);
}

/// The CLI on mlp with `spec`: exit code 4 and a JSON report with the failure and everything eager and
/// fp64 computed. Returns the report.
nlohmann::json cli_fails(const FaultRun& run, const std::string& spec, const std::string& kind, const std::string& flags = "") {
  const std::string json_path = run.scratch().file("report.json");
  auto r = testing::run_cli(fmt::format("{} {} --compiled '{}' --no-exploded --no-localize {} --json {}", fixture("mlp.pt2"),
                                        fixture("mlp_inputs.pt"), spec, flags, json_path));
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.out.find("COMPILER FAILED"), std::string::npos) << r.out;
  std::ifstream f(json_path);
  if (!f) {
    ADD_FAILURE() << "no report at " << json_path << ": " << r.err;
    return {};
  }
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["verdict"], "compiler_failed");
  EXPECT_EQ(j["compiled_failed"], true);
  EXPECT_EQ(j["compiles"][0]["failure"], kind) << j["compiles"][0]["message"];
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["reason"], "no_compiled_value");
  EXPECT_GT(j["outputs"][0]["eager_to_fp64"]["rmse"].get<double>(), 0);
  return j;
}

// --- the worker killed at each request ------------------------------------------------------------

/// SIGKILL on receiving `op`: the engine restarts the worker once, it dies again, worker_died.
void killed_at(const std::string& op, const std::string& activity) {
  FaultRun run("killed_at_" + op);
  DiffResult r = Mlp().diff_with(run.spec("die_at_" + op), 60, /*exploded=*/true);
  expect_failed(r, "worker_died", fmt::format("the external worker died while {}", activity));
  EXPECT_NE(r.compiles.front().message.find("killed by signal 9"), std::string::npos) << r.compiles.front().message;
  EXPECT_NE(r.compiles.front().message.find("about to die"), std::string::npos) << "its stderr, quoted";
  EXPECT_EQ(r.compiles.size(), 1u) << "a worker that died twice is not asked for the exploded compile";
  EXPECT_EQ(run.workers_started(), 2u) << "one start and one restart";
  run.expect_no_leftovers();
}

TEST(WorkerKilled, AtHelloIsWorkerDiedAfterOneRestart) { killed_at("hello", "starting the external worker"); }
TEST(WorkerKilled, AtLoadIsWorkerDiedAfterOneRestart) { killed_at("load", "loading the archive"); }
TEST(WorkerKilled, AtCompileIsWorkerDiedAfterOneRestart) { killed_at("compile", "compiling 3 nodes"); }
TEST(WorkerKilled, AtRunIsWorkerDiedAfterOneRestart) { killed_at("run", "running 3 nodes"); }

/// A segfault in native code under faulthandler (pt2diff_worker enables it): the message names the fatal
/// error and the innermost Python frame, not the last lines of whatever the log held before.
TEST(WorkerKilled, BySegfaultNamesItsPythonFrame) {
  FaultRun run("segfault");
  DiffResult r = Mlp().diff_with(run.spec("segfault"), 60, /*exploded=*/false);
  expect_failed(r, "worker_died", "the external worker died while compiling 3 nodes, linear .. linear_1 (killed by signal 11");
  const std::string& m = r.compiles.front().message;
  // The innermost frame is the library's (ctypes); the worker's own frame under it is named too.
  EXPECT_NE(m.find("Fatal Python error: Segmentation fault in string_at (__init__.py:"), std::string::npos) << m;
  EXPECT_NE(m.find("), called from compile_natively (broken_worker.py:"), std::string::npos) << m;
  run.expect_no_leftovers();
}

/// The same through the CLI: exit code 4, the JSON report written, nothing left.
void cli_killed_at(const std::string& op) {
  FaultRun run("cli_killed_at_" + op);
  nlohmann::json j = cli_fails(run, run.spec("die_at_" + op), "worker_died");
  EXPECT_NE(j["compiles"][0]["message"].get<std::string>().find("killed by signal 9"), std::string::npos);
  EXPECT_EQ(run.workers_started(), 2u);
  run.expect_no_leftovers();
}

TEST(WorkerKilledCli, AtHelloWritesTheReportAndExits4) { cli_killed_at("hello"); }
TEST(WorkerKilledCli, AtLoadWritesTheReportAndExits4) { cli_killed_at("load"); }
TEST(WorkerKilledCli, AtCompileWritesTheReportAndExits4) { cli_killed_at("compile"); }
TEST(WorkerKilledCli, AtRunWritesTheReportAndExits4) { cli_killed_at("run"); }

// --- outputs that are wrong ------------------------------------------------------------------------

/// The worker answers `run` in `mode`, returning `values` (eager's outputs unless given): run_failed naming `problem`.
void bad_output(const std::string& mode, const std::string& problem, std::optional<std::vector<c10::IValue>> values = std::nullopt) {
  Mlp m;
  FaultRun run("bad_output_" + mode);
  run.returns(values ? *values : m.eager_outputs());
  DiffResult r = m.diff_with(run.spec(mode));
  expect_failed(r, "run_failed", problem);
  EXPECT_TRUE(r.diverged);
  EXPECT_EQ(run.workers_started(), 1u) << "a bad output is not a death";
  run.expect_no_leftovers();
}

TEST(WorkerOutputs, EagersOwnOutputsPass) {  // the harness itself: an honest worker agrees
  Mlp m;
  FaultRun run("honest_outputs");
  run.returns(m.eager_outputs());
  DiffResult r = m.diff_with(run.spec("outputs"));
  ASSERT_FALSE(r.compiles.empty());
  EXPECT_TRUE(r.compiles.front().ok) << r.compiles.front().message;
  EXPECT_FALSE(r.compiled_failed);
  EXPECT_FALSE(r.diverged);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].verdict.pass) << r.outputs[0].verdict.detail;
  run.expect_no_leftovers();
}

TEST(WorkerOutputs, TruncatedFileIsRunFailed) {
  bad_output("truncated_output", "outputs file is truncated after running 3 nodes, linear .. linear_1");
}

TEST(WorkerOutputs, TensorPastTheEndOfItsStorageIsRunFailed) {
  bad_output("short_storage", "needs 256 bytes of storage but its storage record holds 128: the file is truncated or damaged");
}

TEST(WorkerOutputs, NotATorchSaveFileIsRunFailed) { bad_output("not_torch_save", "not a zip-format torch.save file"); }

TEST(WorkerOutputs, NoFileWrittenIsRunFailed) { bad_output("no_output", "wrote no outputs file"); }

TEST(WorkerOutputs, WrongDtypeIsRunFailed) {
  const at::Tensor eager = Mlp().eager_outputs().at(0).toTensor();
  bad_output("outputs", "output 'linear_1' is float64[4, 16], expected float32[4, 16]", std::vector<c10::IValue>{eager.to(at::kDouble)});
}

TEST(WorkerOutputs, WrongShapeIsRunFailed) {
  const at::Tensor eager = Mlp().eager_outputs().at(0).toTensor();
  // The same 64 numbers, flattened: a comparison that flattens would pass them.
  bad_output("outputs", "output 'linear_1' is float32[64], expected float32[4, 16]", std::vector<c10::IValue>{eager.reshape({-1})});
  // One row, which broadcasts against eager's four.
  bad_output("outputs", "output 'linear_1' is float32[1, 16], expected float32[4, 16]", std::vector<c10::IValue>{eager.narrow(0, 0, 1)});
}

TEST(WorkerOutputs, WrongCountIsRunFailed) {
  const at::Tensor eager = Mlp().eager_outputs().at(0).toTensor();
  bad_output("outputs", "returned 2 values for 1 outputs", std::vector<c10::IValue>{eager, eager});
}

TEST(WorkerOutputs, ANumberForATensorIsRunFailed) {
  bad_output("outputs", "output 'linear_1' is a Double, expected float32[4, 16]", std::vector<c10::IValue>{c10::IValue(1.5)});
}

TEST(WorkerOutputsCli, WrongDtypeWritesTheReportAndExits4) {
  Mlp m;
  FaultRun run("cli_wrong_dtype");
  run.returns({m.eager_outputs().at(0).toTensor().to(at::kDouble)});
  nlohmann::json j = cli_fails(run, run.spec("outputs"), "run_failed");
  EXPECT_NE(j["compiles"][0]["message"].get<std::string>().find("expected float32[4, 16]"), std::string::npos);
  run.expect_no_leftovers();
}

// --- the disk fills up -------------------------------------------------------------------------------

TEST(WorkerDiskFull, AFailedWriteIsRunFailed) {  // RLIMIT_FSIZE: the write fails with EFBIG
  Mlp m;
  FaultRun run("fsize_limit");
  run.returns(m.eager_outputs());
  DiffResult r = m.diff_with(run.spec("fsize_limit"));
  expect_failed(r, "run_failed", "File too large");
  EXPECT_EQ(run.workers_started(), 1u);
  run.expect_no_leftovers();
}

TEST(WorkerDiskFull, KilledBySigxfszIsWorkerDied) {  // the same limit, SIGXFSZ at its default action
  Mlp m;
  FaultRun run("fsize_signal");
  run.returns(m.eager_outputs());
  DiffResult r = m.diff_with(run.spec("fsize_signal"));
  expect_failed(r, "worker_died", "killed by signal 25");
  EXPECT_EQ(run.workers_started(), 2u);
  run.expect_no_leftovers();
}

TEST(WorkerDiskFullCli, AFailedWriteWritesTheReportAndExits4) {
  Mlp m;
  FaultRun run("cli_fsize_limit");
  run.returns(m.eager_outputs());
  nlohmann::json j = cli_fails(run, run.spec("fsize_limit"), "run_failed");
  EXPECT_NE(j["compiles"][0]["message"].get<std::string>().find("File too large"), std::string::npos);
  run.expect_no_leftovers();
}

// --- slow answers --------------------------------------------------------------------------------

TEST(WorkerTimeout, SlowButWithinTheTimeoutPasses) {
  Mlp m;
  FaultRun run("slow_within");
  run.returns(m.eager_outputs());
  DiffResult r = m.diff_with(run.spec("slow_run", 1.5), 3);
  ASSERT_FALSE(r.compiles.empty());
  EXPECT_TRUE(r.compiles.front().ok) << r.compiles.front().message;
  EXPECT_FALSE(r.compiled_failed);
  EXPECT_FALSE(r.diverged);
  run.expect_no_leftovers();
}

TEST(WorkerTimeout, SlowerThanTheTimeoutIsTimedOut) {
  Mlp m;
  FaultRun run("slow_beyond");
  run.returns(m.eager_outputs());
  const auto start = std::chrono::steady_clock::now();
  DiffResult r = m.diff_with(run.spec("slow_run", 30), 2, /*exploded=*/true);
  expect_failed(r, "timed_out", "gave no answer within 2 s while running 3 nodes");
  EXPECT_EQ(r.compiles.size(), 1u) << "a worker that timed out is not asked for the exploded compile";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20);
  run.expect_no_leftovers();
}

TEST(WorkerTimeout, AHangKillsTheWorkersSubprocessesToo) {
  FaultRun run("hang_with_child");
  DiffResult r = Mlp().diff_with(run.spec("hang_with_child"), 2);
  expect_failed(r, "timed_out", "gave no answer within 2 s while compiling 3 nodes");
  EXPECT_EQ(run.recorded("child").size(), 1u);
  run.expect_no_leftovers();
}

TEST(WorkerTimeoutCli, SlowerThanTheTimeoutWritesTheReportAndExits4) {
  Mlp m;
  FaultRun run("cli_slow_beyond");
  run.returns(m.eager_outputs());
  nlohmann::json j = cli_fails(run, run.spec("slow_run", 30), "timed_out", "--timeout 2");
  EXPECT_NE(j["compiles"][0]["message"].get<std::string>().find("gave no answer within 2 s while running"), std::string::npos);
  run.expect_no_leftovers();
}

}  // namespace
}  // namespace pt2diff
