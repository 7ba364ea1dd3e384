// engine/worker/worker_backend.h — a backend whose compiler lives in another process that speaks
// docs/worker-protocol.md: the Inductor worker, or any external:COMMAND.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pt2diff/advanced/backend.h"

namespace pt2diff {

class WorkerBackend final : public Backend {
 public:
  /// `argv` starts the worker; `label` names it in messages ("inductor worker").
  /// `server_launcher`: the stock inductor_worker.py, which can start a worker server (worker_server.h); with
  /// PT2DIFF_WORKER_SERVER=1 a CPU worker whose argv is PYTHON SCRIPT.py ... is then forked by that server.
  WorkerBackend(const Program& program, std::vector<std::string> argv, std::string label, std::string name,
                const BackendOptions& options, std::string server_launcher = {});
  ~WorkerBackend() override;
  std::string name() const override { return name_; }
  bool observes() const override { return true; }  ///< asks the worker; its compile reply says whether it can
  /// Sends RegionSpec::eager; a compile reply without "eager" (a worker that does not leave nodes eager)
  /// is refused as Unusable rather than read as a compile of the whole region.
  bool leaves_eager() const override { return true; }
  bool compiles_apart() const override { return true; }
  double startup_seconds() const override;
  void start_ahead() override;
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override;
  /// Compiles in this worker with `options`' inductor_config, matmul_precision and no_tf32 (the compile
  /// request's "config" and "settings"); every other option stays this backend's.
  std::unique_ptr<Backend> with_compiler_settings(const BackendOptions& options) override;
  /// compile() with the compiler settings of `settings` (with_compiler_settings' backends call it).
  std::unique_ptr<CompiledRegion> compile_with(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs,
                                               const BackendOptions& settings);

  /// The window as a PyTorch unit test, written beside an exported region (export_region's `test`): where, what
  /// its docstring says, the rule it judges by; `status` is the worker's answer ("written", or why not).
  struct UnitTest {
    std::string path, graph, nodes, summary, rule = "same";
    double tol = 1e-3;
    std::string status;
  };
  /// The compiler's own artifacts of an exported window (export_region's `artifacts`): one compile of it with
  /// Inductor's debug trace on (python/pt2diff_worker/artifacts.py), its files copied into `dir` under the
  /// compile settings `settings` (Inductor config, matmul precision, TF32); `files` what was written, `status` why
  /// none when empty.
  struct Artifacts {
    std::string dir;
    BackendOptions settings;
    std::vector<ReproArtifact> files;
    std::string status;
  };
  /// Writes `region` (fused) as a standalone torch.export archive at `archive` and its inputs (one per
  /// RegionSpec::inputs entry, weights included) as a torch.save tuple at `inputs_file`; with `test`, also the
  /// window as a PyTorch unit test (python/pt2diff_worker/unit_test.py); with `artifacts`, the compiler's own files
  /// of the window. Returns the exported program's node names, in order. Throws BackendFailure.
  std::vector<std::string> export_region(const RegionSpec& region, const std::vector<c10::IValue>& inputs, const std::string& archive,
                                         const std::string& inputs_file, UnitTest* test = nullptr, Artifacts* artifacts = nullptr);

  /// Runs a region compiled by this backend (CompiledRegion::run() calls it); with `observed`, the
  /// kernel map of the run too (the worker's `observed_file`: docs/worker-protocol.md); with `shapes`, a recompile
  /// the run caused is counted there.
  std::vector<c10::IValue> run(const std::string& region_id, const RegionSpec& region, const std::vector<c10::IValue>& inputs,
                               double& seconds, KernelMap* observed = nullptr, ShapeCompile* shapes = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
};

}  // namespace pt2diff
