// engine/backends/inductor_backend.cpp — "inductor": the shipped Python worker (inductor_worker.py)
// compiling regions with Inductor's JIT (compile_fx), in the venv pt2diff was built against; "aoti": the
// same worker compiling each region with AOTInductor (exported, packaged, loaded with aoti_load_package).
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>

#include "engine/backends/backends.h"
#include "engine/worker/worker_backend.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace fs = std::filesystem;

namespace {

std::string from_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string stock_worker_launcher() {
  for (const char* candidate : {PT2DIFF_SOURCE_WORKER, PT2DIFF_INSTALLED_WORKER})
    if (fs::exists(candidate)) return candidate;
  return "";
}

namespace {

std::string worker_script() {
  if (std::string env = from_env("PT2DIFF_WORKER"); !env.empty()) return env;
  if (std::string stock = stock_worker_launcher(); !stock.empty()) return stock;
  throw Error(Error::Kind::Usage, fmt::format("cannot find inductor_worker.py (looked at {} and {}): set PT2DIFF_WORKER",
                                              PT2DIFF_SOURCE_WORKER, PT2DIFF_INSTALLED_WORKER));
}

}  // namespace

std::unique_ptr<Backend> make_inductor_backend(const Program& program, const BackendOptions& options) {
  return make_inductor_worker(program, options);
}

std::unique_ptr<Backend> make_aoti_compiler_backend(const Program& program, const BackendOptions& options) {
  return make_inductor_worker(program, options, "aoti");
}

std::unique_ptr<WorkerBackend> make_inductor_worker(const Program& program, const BackendOptions& options, const std::string& compiler) {
  std::string python = !options.python.empty() ? options.python : from_env("PT2DIFF_PYTHON");
  if (python.empty()) python = PT2DIFF_DEFAULT_PYTHON;
  std::string cache = !options.inductor_cache_dir.empty() ? options.inductor_cache_dir : from_env("PT2DIFF_INDUCTOR_CACHE");
  if (cache.empty()) cache = (fs::path(from_env("HOME").empty() ? "/tmp" : from_env("HOME")) / ".cache/pt2diff/inductor").string();
  std::vector<std::string> argv = {python, worker_script(), "--cache-dir", cache};
  if (compiler != "inductor") {
    argv.push_back("--compiler");
    argv.push_back(compiler);
  }
  std::string name = fmt::format("{} ({})", compiler, options.device);
  for (const std::string& kv : options.inductor_config) name += " " + kv;
  return std::make_unique<WorkerBackend>(program, std::move(argv), compiler == "aoti" ? "AOTInductor worker" : "inductor worker",
                                         name, options, stock_worker_launcher());
}

}  // namespace pt2diff
