// engine/backends/backends.h — the factories behind make_backend(), one file per backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pt2diff/advanced/backend.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

std::unique_ptr<Backend> make_eager_backend(const Program& program, const BackendOptions& options);
std::unique_ptr<Backend> make_fault_backend(const std::string& spec, const Program& program, const BackendOptions& options);
/// A fault spec ("mm_7:scale", "aten.mm#2:bf16") naming a node of `graph`, renamed for a standalone export
/// of `window` (nodes of `graph`): node names change when a window is exported again, the K-th
/// occurrence of its op inside the window does not ("aten.mm#1:bf16"). `exported_on_cpu`: a CUDA-only
/// fused attention is its math form there. Throws pt2diff::Error(Usage) for a malformed spec.
std::string fault_spec_for_window(const std::string& spec, const Graph& graph, const std::vector<NodeId>& window, bool exported_on_cpu);
std::unique_ptr<Backend> make_inductor_backend(const Program& program, const BackendOptions& options);
class WorkerBackend;
/// The shipped Inductor worker as a WorkerBackend (also used to export repro archives); `compiler`
/// "aoti" makes it compile each region with AOTInductor (`--compiler aoti`: docs/worker-protocol.md).
std::unique_ptr<WorkerBackend> make_inductor_worker(const Program& program, const BackendOptions& options,
                                                    const std::string& compiler = "inductor");
/// "aoti": the archive's regions compiled by AOTInductor in the worker (the kernel map included).
std::unique_ptr<Backend> make_aoti_compiler_backend(const Program& program, const BackendOptions& options);
/// The shipped worker launcher (inductor_worker.py in the source tree, or installed); empty when neither is there.
/// It also starts worker servers (engine/worker/worker_server.h).
std::string stock_worker_launcher();
std::unique_ptr<Backend> make_external_backend(const std::string& command, const Program& program, const BackendOptions& options);
std::unique_ptr<Backend> make_aoti_backend(const std::string& package, const Program& program, const BackendOptions& options);

/// A backend running a program built elsewhere that it cannot observe (an AOTInductor package), which can
/// instead compile the archive that program came from, instrumented: its twin. The pipeline engages the
/// twin when the package's outputs disagree (stage observe_twin): the twin's kernel table, then
/// localization through the twin.
class TwinBackend {
 public:
  virtual ~TwinBackend() = default;
  /// Makes the twin (once) and returns it. Throws BackendFailure when it cannot be made.
  virtual Backend& engage_twin() = 0;
  /// From now on compile() sends every region to the twin and compiles_regions() is true: the twin
  /// reproduces the divergence, so localization through it means something.
  virtual void route_regions_to_twin() = 0;
  /// What the twin is, for the report: "an instrumented AOTInductor compile of the archive by this torch (2.13.0)".
  virtual std::string twin_description() const = 0;
};

/// `inner`, compiling each region (same nodes, inputs, outputs, exploded or not) once; `compiles`, when
/// given, is set to a function returning how many compiles reached `inner`.
std::unique_ptr<Backend> make_caching_backend(std::unique_ptr<Backend> inner, std::function<size_t()>* compiles = nullptr);

/// The in-process backends (eager, fault): regions run through the interpreter; `after_node` (may be
/// empty) sees every node's call and may change its outputs.
class InterpreterBackend : public Backend {
 public:
  /// Regions run on `options.device` (the engine's native device), seeded with `options.seed`.
  InterpreterBackend(const Program& program, std::string name, std::function<void(const Node&, NodeCall&)> after_node,
                     const BackendOptions& options);
  std::string name() const override { return name_; }
  /// A node left eager runs without after_node (no planted fault there).
  bool leaves_eager() const override { return true; }
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override;

 private:
  Interpreter interpreter_;
  std::string name_;
  RunOptions options_;
};

}  // namespace pt2diff
