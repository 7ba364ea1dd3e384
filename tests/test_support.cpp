// tests/test_support.cpp — fixture paths and running the CLI from tests.
#include "test_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace pt2diff::testing {

std::string fixture(const std::string& name) { return std::string(PT2DIFF_FIXTURES) + "/" + name; }

const std::vector<std::string>& runnable_fixtures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const char* base : {"mlp", "attention", "conv_bn_relu", "ln_softmax_gelu", "bf16_block", "multi_output", "index_none",
                             "dynamic_batch", "cond", "loop_map", "dropout", "mixed_precision"}) {
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
}  // namespace

CliResult run_cli(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path() / ("pt2diff_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const std::string cmd = std::string(PT2DIFF_CLI) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace pt2diff::testing
