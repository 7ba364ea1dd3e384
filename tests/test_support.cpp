// tests/test_support.cpp — fixture paths and running the CLI from tests.
#include "test_support.h"

#include "pt2diff/diff.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pt2diff::testing {

std::string fixture(const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;  // a path outside the fixtures (/dev/null)
  std::string path = PT2DIFF_FIXTURES;  // appended in place: GCC 12 warns falsely (-Warray-bounds) on a + "/" + b
  path += '/';
  path += name;
  return path;
}

const std::vector<std::string>& runnable_fixtures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const char* base : {"mlp", "attention", "conv_bn_relu", "ln_softmax_gelu", "bf16_block", "multi_output", "index_none",
                             "dynamic_batch", "cond", "loop_map", "dropout", "mixed_precision", "grad_regions",
                             "autocast_regions", "invoke_subgraph"}) {
      out.emplace_back(base);
      out.emplace_back(std::string(base) + "_core");
    }
    return out;
  }();
  return names;
}

std::string base_name(const std::string& fixture_name) {
  size_t core = fixture_name.rfind("_core");
  return core == std::string::npos ? fixture_name : fixture_name.substr(0, core);
}

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// FNV-1a of `bytes`, continuing from `h`: the cache keys.
uint64_t fnv1a(const std::string& bytes, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// FNV-1a over the bytes of each file: the cache key's part for what the fixture holds.
[[maybe_unused]] uint64_t hash_files(const std::vector<std::string>& paths) {
  uint64_t h = fnv1a("");
  for (const auto& path : paths) h = fnv1a(slurp(path), h);
  return h;
}

std::string shell_quote(const std::string& s) { return shell_line({s}); }

/// An exclusive flock on a file, released when it goes out of scope: parallel tests (ctest -j) wait
/// for the one computing the cache instead of computing it again.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + path);
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};
}  // namespace

namespace {
/// What else picks kernels besides the capability and the thread count: the CPU model (oneDNN's ISA,
/// MKL's vendor paths) and the variables that steer oneDNN and MKL.
[[maybe_unused]] std::string machine_key() {
  std::string key;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 || line.rfind("vendor_id", 0) == 0) key += line + "\n";
  for (const char* var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "MKL_CBWR",
                          "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE"})
    if (const char* v = std::getenv(var)) key += std::string(var) + "=" + v + "\n";
  return std::to_string(fnv1a(key));
}

/// Where eager_reference.py's NAME.after.pt of a cached eager file lies.
std::string after_path(const std::string& outputs) { return outputs.substr(0, outputs.size() - 3) + ".after.pt"; }

std::string reference_outputs(const std::string& name, bool fp64, const std::string& library) {
#if defined(PT2DIFF_TEST_PYTHON) && defined(PT2DIFF_TEST_CACHE) && defined(PT2DIFF_EAGER_REFERENCE)
  namespace fs = std::filesystem;
  const int threads = at::get_num_threads();
  const std::string capability = at::get_cpu_capability();
  const fs::path dir = fs::path(PT2DIFF_TEST_CACHE) / ("torch-" + std::string(PT2DIFF_TORCH_VERSION) + "-" + capability +
                                                        "-threads" + std::to_string(threads) + "-" + machine_key());
  fs::create_directories(dir);
  // A fixture in a folder (torch-2.12/toy) is cached flat, as eager_reference.py writes it (torch-2.12+toy).
  auto flat = [](std::string n) {
    std::replace(n.begin(), n.end(), '/', '+');
    return n;
  };
  auto cached = [&](const std::string& n) {
    std::vector<std::string> files = {fixture(n + ".pt2"), fixture(base_name(n) + "_inputs.pt")};
    if (!library.empty()) files.push_back(library);
    return dir / (flat(n) + (fp64 ? "-fp64-" : "-eager-") + std::to_string(hash_files(files)) + ".pt");
  };
  const fs::path want = cached(name);
  FileLock lock((dir / ".lock").string());
  if (fs::exists(want)) return want.string();
  // One Python start (torch's import is most of the cost) for every eager fixture still missing.
  std::vector<std::string> names = {name};
  if (library.empty() && !fp64) {
    std::vector<std::string> all = runnable_fixtures();
    // The archives of other torch versions (fixtures/torch-*/toy[_core].pt2: torch_versions_test.cpp).
    for (const auto& entry : fs::directory_iterator(PT2DIFF_FIXTURES))
      if (entry.is_directory() && entry.path().filename().string().rfind("torch-", 0) == 0)
        for (const char* stem : {"toy", "toy_core"})
          if (fs::exists(entry.path() / (std::string(stem) + ".pt2")))
            all.push_back(entry.path().filename().string() + "/" + stem);
    // The graphs that write in place (fixtures/mutation/NAME.pt2: mutation_test.cpp).
    if (fs::is_directory(fs::path(PT2DIFF_FIXTURES) / "mutation"))
      for (const auto& entry : fs::directory_iterator(fs::path(PT2DIFF_FIXTURES) / "mutation"))
        if (entry.path().extension() == ".pt2") all.push_back("mutation/" + entry.path().stem().string());
    for (const auto& n : all)
      if (n != name && !fs::exists(cached(n))) names.push_back(n);
  }
  const fs::path work = dir / ("run-" + std::to_string(::getpid()));
  std::string cmd = shell_quote(PT2DIFF_TEST_PYTHON) + " " + shell_quote(PT2DIFF_EAGER_REFERENCE) + " --out " +
                    shell_quote(work.string()) + " --threads " + std::to_string(threads) + " --capability " +
                    shell_quote(capability) + (fp64 ? " --fp64" : "");
  if (!library.empty()) cmd += " --library " + shell_quote(library);
  cmd += " " + shell_quote(PT2DIFF_FIXTURES);
  for (const auto& n : names) cmd += " " + n;
  const std::string log = (dir / ("log-" + std::to_string(::getpid()))).string();
  const int status = std::system((cmd + " >" + shell_quote(log) + " 2>&1").c_str());
  const std::string message = slurp(log);
  fs::remove(log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fs::remove_all(work);
    throw std::runtime_error("PyTorch on this machine could not run fixture " + name + ": " + message);
  }
  for (const auto& n : names) {
    fs::rename(work / (flat(n) + ".pt"), cached(n));
    if (fs::exists(work / (flat(n) + ".after.pt"))) fs::rename(work / (flat(n) + ".after.pt"), after_path(cached(n).string()));
  }
  fs::remove_all(work);
  return want.string();
#else
  (void)fp64;
  (void)library;
  throw std::runtime_error("reference outputs of " + name + ": this test binary was built without the venv's Python");
#endif
}
}  // namespace

std::string eager_outputs(const std::string& name, const std::string& library) {
  return reference_outputs(name, false, library);
}

std::string fp64_outputs(const std::string& name) { return reference_outputs(name, true, ""); }

std::string eager_inputs_after(const std::string& name) { return after_path(reference_outputs(name, false, "")); }

ScratchDir::ScratchDir(const std::string& tag) {
  std::string pattern = (std::filesystem::temp_directory_path() / ("pt2diff_" + tag + "_XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory like " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {
/// The CLI runs of the test that is running, for the evidence a failure prints.
struct CliRun {
  std::string args;
  CliResult result;
};
std::vector<CliRun>& runs_of_this_test() {
  static std::vector<CliRun> runs;
  return runs;
}

/// The text report down to its per-node tables, at most `n` lines, indented; what is left out is said.
std::string report_excerpt(const std::string& text, size_t n) {
  std::istringstream in(text);
  std::string out;
  size_t shown = 0, total = 0;
  bool cut = false;
  for (std::string line; std::getline(in, line);) {
    ++total;
    if (line.rfind("nodes introducing the most error", 0) == 0 || line.rfind("per node, in graph order", 0) == 0) cut = true;
    if (!cut && shown < n) {
      out += "  " + line + "\n";
      ++shown;
    }
  }
  if (total > shown) out += "  ... " + std::to_string(total - shown) + " more lines (the per-node tables) in the kept log\n";
  return out;
}

/// The last `n` lines of `text`, indented.
std::string tail_lines(const std::string& text, size_t n) {
  size_t pos = text.size();
  while (pos > 0 && text[pos - 1] == '\n') --pos;
  const size_t end = pos;
  size_t lines = 0;
  while (pos > 0 && lines < n)
    if (text[--pos] == '\n') ++lines;
  if (pos > 0) ++pos;
  std::string out = pos > 0 ? "  ...\n" : "";
  std::istringstream in(text.substr(pos, end - pos));
  for (std::string line; std::getline(in, line);) out += "  " + line + "\n";
  return out;
}

/// A failing test that ran the CLI prints each run (its arguments, exit status and the tails of its report and
/// stderr) and keeps the whole output in $PT2DIFF_TEST_EVIDENCE/SUITE.TEST/ (ctest: build/test-evidence), where no
/// test's scratch directory is: the evidence outlives the test (tests/python/evidence.py does the same for Python).
class CliEvidence : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { runs_of_this_test().clear(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const auto& runs = runs_of_this_test();
    if (!info.result()->Failed() || runs.empty()) return;
    const char* base = std::getenv("PT2DIFF_TEST_EVIDENCE");
    const std::filesystem::path folder = std::filesystem::path(base && *base ? base : "/tmp/pt2diff-test-evidence") /
                                         (std::string(info.test_suite_name()) + "." + info.name());
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    std::ostringstream text;
    text << runs.size() << " pt2diff run(s) in this test; each one's whole output is kept in " << folder.string() << "\n";
    for (size_t i = 0; i < runs.size(); ++i) {
      const CliRun& r = runs[i];
      std::ofstream(folder / ("run" + std::to_string(i + 1) + ".log"))
          << "$ pt2diff " << r.args << "\nexit: " << r.result.exit_code << "\n\n--- stdout\n"
          << r.result.out << "\n--- stderr\n" << r.result.err;
      text << "--- run" << i + 1 << ": exit " << r.result.exit_code << ": pt2diff " << r.args << "\n";
      if (!r.result.out.empty()) text << "stdout (the report):\n" << report_excerpt(r.result.out, 60);
      if (!r.result.err.empty()) text << "stderr, last 12 lines:\n" << tail_lines(r.result.err, 12);
    }
    std::fputs(text.str().c_str(), stdout);
    std::fflush(stdout);
  }
};
[[maybe_unused]] const bool cli_evidence_listener = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new CliEvidence);  // gtest owns it
  return true;
}();
}  // namespace

CliResult run_cli(const std::string& args) {
  ScratchDir dir("cli");
  const std::string out = dir.file("out"), err = dir.file("err");
  const std::string cmd = shell_quote(PT2DIFF_CLI) + " " + args + " >" + shell_quote(out) + " 2>" + shell_quote(err);
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  runs_of_this_test().push_back({args, r});
  return r;
}

}  // namespace pt2diff::testing
