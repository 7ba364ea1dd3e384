// tests/engine/worker/worker_server_test.cpp — workers forked by the worker server (PT2DIFF_WORKER_SERVER=1,
// engine/worker/worker_server.cpp): the transport the engine gets is the one it would start itself (lines in
// and out, the exit status, a kill of the process group), another environment gets another server, what is
// not a Python script is started as before, and a diff gives the same report served or not.
// The server's side alone: tests/python/pt2diff_worker/test_worker_server.py.
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test_support.h"
#include "engine/worker/worker_server.h"

namespace pt2diff {
namespace {

using testing::fixture;

/// The parent process of `pid` (from /proc/PID/stat), or -1.
pid_t parent_of(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(text.substr(paren + 2));
  std::string state;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

/// A worker script: answers each line with "echo LINE TMPDIR", exits with argv[1] at "bye", or sleeps at "sleep".
std::string write_script(const testing::ScratchDir& dir) {
  const std::string path = dir.file("echo_worker.py");
  std::ofstream(path) << "import os, sys, time\n"
                         "for line in sys.stdin:\n"
                         "    line = line.strip()\n"
                         "    if line == 'bye':\n"
                         "        sys.exit(int(sys.argv[1]))\n"
                         "    if line == 'sleep':\n"
                         "        time.sleep(60)\n"
                         "    print('echo', line, os.environ['TMPDIR'], os.environ.get('SERVER_TEST_KEY', '-'), os.environ.get('PT2DIFF_SERVER_TEST', '-'), flush=True)\n";
  return path;
}

/// What a failing served-worker test prints: the worker's stderr and the logs of the servers written in the last
/// 10 minutes (/tmp/pt2diff-workers-UID/KEY.log), whose last lines say why a request was refused or a worker died.
std::string diagnostics(const std::string& stderr_log) {
  namespace fs = std::filesystem;
  auto tail = [](const fs::path& path) {
    std::ifstream f(path);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
  };
  std::string out = "\n--- the worker's stderr:\n" + tail(stderr_log);
  std::error_code ec;
  const fs::path dir = fs::path("/tmp") / fmt::format("pt2diff-workers-{}", getuid());
  const auto now = fs::file_time_type::clock::now();
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".log" && now - entry.last_write_time(ec) < std::chrono::minutes(10))
      out += "\n--- " + entry.path().string() + ":\n" + tail(entry.path());
  return out;
}

std::string read(WorkerProcess& p) {
  std::string line;
  EXPECT_EQ(p.read_line(line, 120, nullptr), WorkerProcess::Read::Line);
  return line;
}

TEST(WorkerServer, ForksTheWorkerAndReportsItsEnd) {
  testing::ScratchDir dir("worker-server");
  const std::string script = write_script(dir);
  auto p = start_served_worker({PT2DIFF_TEST_PYTHON, script, "3"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + dir.path()});
  ASSERT_TRUE(p) << "no server served the worker (its log: /tmp/pt2diff-workers-UID/KEY.log)";
  EXPECT_TRUE(p->served());
  const pid_t server = parent_of(p->pid());
  EXPECT_NE(server, getpid()) << "the worker is the server's child, not ours";
  ASSERT_TRUE(p->write_line("one"));
  EXPECT_EQ(read(*p), fmt::format("echo one {} - -", dir.path()));
  ASSERT_TRUE(p->write_line("bye"));
  std::string line;
  EXPECT_EQ(p->read_line(line, 60, nullptr), WorkerProcess::Read::Closed);
  EXPECT_EQ(p->exit_description(), "exited with status 3");

  // The next worker of the same key comes from the same server, with its own TMPDIR.
  testing::ScratchDir other("worker-server");
  auto q = start_served_worker({PT2DIFF_TEST_PYTHON, script, "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + other.path()});
  ASSERT_TRUE(q);
  EXPECT_EQ(parent_of(q->pid()), server);
  ASSERT_TRUE(q->write_line("two"));
  EXPECT_EQ(read(*q), fmt::format("echo two {} - -", other.path()));

  // Another environment (beyond TMPDIR): another server, since torch reads the environment when imported.
  auto r = start_served_worker({PT2DIFF_TEST_PYTHON, script, "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + other.path(), "SERVER_TEST_KEY=1"});
  ASSERT_TRUE(r);
  EXPECT_NE(parent_of(r->pid()), server);
  ASSERT_TRUE(r->write_line("three"));
  EXPECT_EQ(read(*r), fmt::format("echo three {} 1 -", other.path()));

  // pt2diff's own variables (PT2DIFF_*: a planted compiler's switches) are read by the worker's script, not on
  // import: the same server, the worker sees its own values.
  auto t = start_served_worker({PT2DIFF_TEST_PYTHON, script, "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + other.path(), "PT2DIFF_SERVER_TEST=planted"});
  ASSERT_TRUE(t);
  EXPECT_EQ(parent_of(t->pid()), server);
  ASSERT_TRUE(t->write_line("four"));
  EXPECT_EQ(read(*t), fmt::format("echo four {} - planted", other.path()));
}

// The worker's Python may be a wrapper script that sets variables, then runs python (a site's set-up, a test's planted
// torch): a served worker sees what the wrapper set, as one the wrapper started would, not only the engine's.
TEST(WorkerServer, AWrapperPythonsVariablesReachTheWorker) {
  testing::ScratchDir dir("worker-server");
  const std::string wrapper = dir.file("wrapped_python");
  std::ofstream(wrapper) << "#!/bin/sh\nexport SERVER_TEST_KEY=wrapped PT2DIFF_SERVER_TEST=wrapped\nexec '" << PT2DIFF_TEST_PYTHON
                         << "' \"$@\"\n";
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  auto p = start_served_worker({wrapper, write_script(dir), "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + dir.path()});
  ASSERT_TRUE(p) << "no server served the worker" << diagnostics(dir.file("stderr.log"));
  EXPECT_TRUE(p->served());
  ASSERT_TRUE(p->write_line("five")) << diagnostics(dir.file("stderr.log"));
  EXPECT_EQ(read(*p), fmt::format("echo five {} wrapped wrapped", dir.path())) << diagnostics(dir.file("stderr.log"));
}

// A server that cannot start (its Python cannot be executed) is no worker, and its log says why: the failing test or
// engine then prints a reason, not nothing (the grandchild used to exit 127 in silence).
TEST(WorkerServer, AServerThatCannotStartSaysWhyInItsLog) {
  testing::ScratchDir dir("worker-server");
  const std::string python = dir.file("not_executable_python");
  std::ofstream(python) << "#!/bin/sh\nexec '" << PT2DIFF_TEST_PYTHON << "' \"$@\"\n";
  ASSERT_EQ(chmod(python.c_str(), 0644), 0);
  auto p = start_served_worker({python, write_script(dir), "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0,
                               {"TMPDIR=" + dir.path()});
  EXPECT_FALSE(p) << "a Python that cannot be executed serves no worker";
  const std::string logs = diagnostics(dir.file("stderr.log"));
  EXPECT_NE(logs.find("pt2diff: cannot start the worker server " + python + ": Permission denied"), std::string::npos) << logs;
}

TEST(WorkerServer, AKilledWorkerIsReportedKilled) {
  testing::ScratchDir dir("worker-server");
  auto p = start_served_worker({PT2DIFF_TEST_PYTHON, write_script(dir), "0"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"),
                               0, {"TMPDIR=" + dir.path()});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->write_line("sleep"));
  const auto start = std::chrono::steady_clock::now();
  p->kill();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_EQ(p->exit_description(), "killed by signal 9 (Killed)");
}

TEST(WorkerServer, OnlyPythonScriptsAreServed) {
  testing::ScratchDir dir("worker-server");
  EXPECT_FALSE(start_served_worker({"/bin/sh", "-c", "cat"}, PT2DIFF_STOCK_WORKER, dir.file("stderr.log"), 0, {}));
  EXPECT_FALSE(start_served_worker({PT2DIFF_TEST_PYTHON, write_script(dir)}, "", dir.file("stderr.log"), 0, {}));
}

/// The report's JSON without what differs between any two runs: wall times and the process's memory.
nlohmann::json without_times(nlohmann::json j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end();) {
      const std::string key = it.key();
      if ((key.size() >= 7 && key.compare(key.size() - 7, 7, "seconds") == 0) || key == "start_host_bytes" || key == "peak_host_bytes" ||
          key == "host_bytes") {
        it = j.erase(it);
      } else {
        *it = without_times(*it);
        ++it;
      }
    }
  } else if (j.is_array()) {
    for (auto& v : j) v = without_times(v);
  }
  return j;
}

TEST(WorkerServer, ADiffReportsTheSameServedOrNot) {
  testing::ScratchDir dir("worker-server");
  nlohmann::json reports[2];
  for (int served : {0, 1}) {
    const std::string json = dir.file(fmt::format("served{}.json", served));
    // run_cli's child inherits this process's environment.
    ASSERT_EQ(setenv("PT2DIFF_WORKER_SERVER", served ? "1" : "0", 1), 0);
    const testing::CliResult again = testing::run_cli(fmt::format("{} {} --json {}", fixture("mlp.pt2"), fixture("mlp_inputs.pt"), json));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    std::ifstream f(json);
    reports[served] = without_times(nlohmann::json::parse(f));
  }
  unsetenv("PT2DIFF_WORKER_SERVER");
  EXPECT_EQ(reports[0].dump(1), reports[1].dump(1));
}

}  // namespace
}  // namespace pt2diff
