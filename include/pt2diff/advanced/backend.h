// pt2diff/advanced/backend.h — what plays the "compiled" side: compile a region of the graph, run it.
//
//   pt2diff::BackendOptions options;                      // device, Inductor config, timeout, ...
//   auto backend = pt2diff::make_backend("inductor", program, options);
//   pt2diff::RegionSpec whole = pt2diff::RegionSpec::whole_graph(program.ir);
//   auto compiled = backend->compile(whole, inputs);      // throws BackendFailure on a compiler error
//   std::vector<c10::IValue> outputs = compiled->run(inputs);
//
// Backends: "eager" (the interpreter in the graph's dtypes), "inductor" (a persistent Python worker
// compiling with Inductor), "aoti:PACKAGE.pt2" (an AOTInductor package, whole graph only),
// "external:COMMAND" (any program speaking docs/worker-protocol.md) and "fault:SPEC" (eager with a
// planted, deterministic fault: docs/usage.md lists the kinds).
#pragma once

#include <ATen/core/ivalue.h>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pt2diff/failure.h"
#include "pt2diff/options.h"
#include "pt2diff/graph.h"
#include "pt2diff/program.h"
#include "pt2diff/region.h"
#include "pt2diff/results.h"

namespace pt2diff {

/// A compiler failing is an outcome, not a bug: diff() records it in the report. Thrown by
/// Backend::compile() and CompiledRegion::run().
class BackendFailure : public std::runtime_error {
 public:
  using Kind = FailureKind;  ///< pt2diff/failure.h
  BackendFailure(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  /// failure_kind_name(kind()): "compile_failed", "run_failed", "worker_died", "timed_out", "unusable", "out_of_memory".
  const char* kind_name() const { return failure_kind_name(kind_); }

 private:
  Kind kind_;
};

/// One buffer the compiled code wrote, copied right after the kernel call that wrote it.
struct ObservedBuffer {
  std::string kernel;                     ///< "cpp_fused_relu_0", "extern_kernels.addmm", "triton_poi_fused_add_0"
  std::string call;                       ///< that call ("<kernel>:<n>"): a kernel may be called more than once
  std::vector<std::string> kernel_nodes;  ///< the exported nodes fused into that call
  std::string buffer;                     ///< the compiler's name ("buf3")
  std::string node;                       ///< the exported node whose value it is; empty: an internal step
  std::string part_of;                    ///< the exported node it was computed for
  int64_t index = -1;                     ///< which output of a multi-output node, when the compiler says
  at::Tensor value;                       ///< on the CPU
};

/// What a region compiled with RegionSpec::observe saw in its last run.
struct KernelMap {
  std::string unavailable;              ///< why there is none, one line; empty when `buffers` is the map
  std::vector<ObservedBuffer> buffers;  ///< in the order the compiled code wrote them
  std::map<std::string, std::string> code;  ///< each generated kernel's source, by kernel name (when the worker gives it)
};

/// A compiled region. run() takes one value per RegionSpec::inputs entry and returns one per output.
class CompiledRegion {
 public:
  virtual ~CompiledRegion() = default;
  virtual std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) = 0;
  /// Seconds of the last run() as the backend measured it (the worker times its own side).
  double last_run_seconds() const { return last_run_seconds_; }
  /// The kernel map of the last run() of a region compiled with RegionSpec::observe: its buffers, or why
  /// there are none (this base: the backend gives none).
  virtual KernelMap kernel_map() const { return {"the backend does not observe its compiled code", {}, {}}; }
  /// How the compile treated the graph's dynamic dims, with the recompiles its runs so far caused
  /// (docs/dynamic-shapes.md); nullopt when the backend does not say.
  virtual std::optional<ShapeCompile> shapes() const { return std::nullopt; }
  /// The decisions the compiler took in this compile, when BackendOptions::decisions asked (compiler_search.h);
  /// nullopt when the backend does not record them.
  virtual std::optional<std::vector<CompilerDecision>> decisions() const { return std::nullopt; }

 protected:
  double last_run_seconds_ = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// "inductor (cpu)", "fault: scale 0.001 at mm_1", ...
  virtual std::string name() const = 0;
  /// Whether compile() takes any region (true) or only RegionSpec::whole_graph (AOTI packages).
  virtual bool compiles_regions() const { return true; }
  /// Whether its compiled regions can observe their own code (RegionSpec::observe, the kernel map).
  virtual bool observes() const { return false; }
  /// Whether compile() honors RegionSpec::eager (nodes left to eager PyTorch).
  virtual bool leaves_eager() const { return false; }
  /// Whether compile() and its region's run() work in another process (a worker): a compile in a second thread
  /// then leaves this process's cores to the engine's own runs (DiffOptions::overlap).
  virtual bool compiles_apart() const { return false; }
  /// Compiles `region` for inputs like `example_inputs` (one per RegionSpec::inputs entry; their
  /// shapes specialize the compile). Throws BackendFailure when the compiler fails.
  virtual std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) = 0;
  /// Seconds the last compile() took, as the backend measured it.
  double last_compile_seconds() const { return last_compile_seconds_; }
  /// Seconds spent so far starting compiler processes (spawn, hello, archive load; summed over
  /// restarts): the part of a compiler-bound run that is neither compiling nor running. 0 for
  /// backends that compile in this process.
  virtual double startup_seconds() const { return 0; }
  /// Starts now what the first compile() would start (a worker process: its imports and its load of the
  /// archive), so that this start-up overlaps the caller's other work; compile() then finds it running. A
  /// start that fails here is not reported: compile() meets the failure again and throws it as it would have.
  /// Not concurrent with this backend's other calls: the caller waits for it before compile(). This base:
  /// nothing to start.
  virtual void start_ahead() {}
  /// A backend that compiles as this one does but with `options`' compiler settings (inductor_config,
  /// matmul_precision, no_tf32: what a worker applies per compile request, docs/worker-protocol.md) in
  /// place of its own, in this backend's compiler process: a compiler lever's compile (the hints) without
  /// starting another worker. It refers to this backend, which must outlive it. nullptr when the backend
  /// cannot (the caller makes a new one with make_backend).
  virtual std::unique_ptr<Backend> with_compiler_settings(const BackendOptions& options) {
    (void)options;
    return nullptr;
  }

 protected:
  double last_compile_seconds_ = 0;
};

/// Makes a backend from its spec ("eager", "inductor", "aoti:PATH", "external:COMMAND", "fault:SPEC").
/// Throws pt2diff::Error(Usage) for an unknown or malformed spec.
std::unique_ptr<Backend> make_backend(const std::string& spec, const Program& program, const BackendOptions& options);

}  // namespace pt2diff
