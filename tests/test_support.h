// tests/test_support.h — fixture paths and running the CLI from tests.
#pragma once

#include <string>

namespace pt2diff::testing {

/// Absolute path of a file under fixtures/.
std::string fixture(const std::string& name);

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
/// Runs the built `pt2diff` with `args` (already shell-quoted where needed).
CliResult run_cli(const std::string& args);

}  // namespace pt2diff::testing
