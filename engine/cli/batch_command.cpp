// engine/cli/batch_command.cpp — `pt2diff batch SOURCE... --out DIR`: a corpus of graphs, triaged.
//
// The orchestration (discovery, dedupe, scheduling on local processes or Ray, resume, summaries) is the
// Python package pt2diff_batch (python/pt2diff_batch, docs/batch.md): every case is this same binary run as
// `pt2diff GRAPH INPUTS --json ... --html ...` in a process of its own. This command only execs
// `PYTHON -m pt2diff_batch --pt2diff <this binary> ARGS...`, with the package on PYTHONPATH.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "engine/cli/command.h"

namespace pt2diff::cli {

namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// The directory holding pt2diff_batch/: the source tree's python/ in a build tree, share/pt2diff once installed.
std::string package_dir() {
  for (const char* candidate : {PT2DIFF_SOURCE_PYTHON_DIR, PT2DIFF_INSTALLED_PYTHON_DIR})
    if (fs::exists(fs::path(candidate) / "pt2diff_batch" / "__init__.py")) return candidate;
  return "";
}

}  // namespace

int run_batch(int argc, char** argv) {
  const std::string python = env_or("PT2DIFF_PYTHON", PT2DIFF_DEFAULT_PYTHON);
  if (python.empty()) {
    std::cerr << "pt2diff: batch needs Python (with torch): set PT2DIFF_PYTHON or configure with -DPT2DIFF_PYTHON\n";
    return 2;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::string dir = package_dir();
  if (dir.empty()) {
    std::cerr << "pt2diff: cannot find the pt2diff_batch package (looked in " << PT2DIFF_SOURCE_PYTHON_DIR << " and "
              << PT2DIFF_INSTALLED_PYTHON_DIR << ")\n";
    return 3;
  }
  const std::string path = env_or("PYTHONPATH", "");
  setenv("PYTHONPATH", (path.empty() ? dir : dir + ":" + path).c_str(), 1);
  std::vector<std::string> args = {python, "-m", "pt2diff_batch", "--pt2diff", ec ? std::string(argv[0]) : self.string()};
  for (int i = 2; i < argc; ++i) args.emplace_back(argv[i]);  // argv[1] is "batch"
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  execvp(c_args[0], c_args.data());
  std::cerr << "pt2diff: cannot run " << python << " for batch: " << std::strerror(errno)
            << " (set PT2DIFF_PYTHON to the Python that has torch)\n";
  return 2;
}

}  // namespace pt2diff::cli
