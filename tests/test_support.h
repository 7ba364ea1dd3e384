// tests/test_support.h — fixture paths and running the CLI from tests.
#pragma once

#include <string>
#include <vector>

namespace pt2diff::testing {

/// Absolute path of a file under fixtures/ (an absolute `name`, such as /dev/null, is returned as is).
std::string fixture(const std::string& name);
/// Every fixture pt2diff can run, training IR and decomposed ("mlp", "mlp_core", ...).
const std::vector<std::string>& runnable_fixtures();
/// "mlp_core" → "mlp": the name its inputs file starts with.
std::string base_name(const std::string& fixture_name);

/// Path of a `torch.save` file holding the tuple of PyTorch eager's outputs of fixture `name` (run by
/// `ep.module()` after `torch.manual_seed(1234)`) computed on this machine, now: the venv's Python runs
/// tests/eager_reference.py with this process's thread count and ATen CPU capability, because eager
/// outputs stored on another CPU are not bit for bit what eager gives here. Cached under the build tree,
/// keyed by torch version, CPU capability, thread count and the bytes of the fixture, its inputs and
/// `library` (a TORCH_LIBRARY the graph needs, loaded first); the first call computes every runnable
/// fixture and every fixtures/torch-*/toy[_core] at once. Throws std::runtime_error with Python's
/// one-line message when it cannot.
std::string eager_outputs(const std::string& name, const std::string& library = "");
/// The same for the fp64 reference (fixtures/reference.py), for graphs whose fp64 result depends on the
/// machine: dropout's mask (ATen's bernoulli draws through MKL on Intel CPUs, through mt19937 elsewhere).
std::string fp64_outputs(const std::string& name);
/// The user inputs (by placeholder name) and buffers (by their name in the module) after PyTorch eager ran the
/// fixture on this machine: what it wrote in place. Computed with eager_outputs(), in the same cache.
std::string eager_inputs_after(const std::string& name);

/// A fresh directory of its own under the temporary directory (mkdtemp), removed with everything in it
/// when this goes out of scope: tests run in parallel, by several users or build trees at once, never
/// share a fixed name under /tmp.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  /// path() + "/" + name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
/// Runs the built `pt2diff` with `args` (already shell-quoted where needed).
CliResult run_cli(const std::string& args);

}  // namespace pt2diff::testing
