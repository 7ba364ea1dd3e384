// tests/test_support.h — fixture paths and running the CLI from tests.
#pragma once

#include <string>
#include <vector>

namespace pt2diff::testing {

/// Absolute path of a file under fixtures/.
std::string fixture(const std::string& name);
/// Every fixture pt2diff can run, training IR and decomposed ("mlp", "mlp_core", ...).
const std::vector<std::string>& runnable_fixtures();
/// "mlp_core" → "mlp": the name its inputs file starts with.
std::string base_name(const std::string& fixture_name);

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
/// Runs the built `pt2diff` with `args` (already shell-quoted where needed).
CliResult run_cli(const std::string& args);

}  // namespace pt2diff::testing
