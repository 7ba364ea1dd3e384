// engine/backends/backends.h — the factories behind make_backend(), one file per backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pt2diff/backend.h"
#include "pt2diff/interpreter.h"

namespace pt2diff {

std::unique_ptr<Backend> make_eager_backend(const Program& program, const BackendOptions& options);
std::unique_ptr<Backend> make_fault_backend(const std::string& spec, const Program& program, const BackendOptions& options);
/// The node a fault spec ("aten.mm#2:scale") plants its fault at. Throws pt2diff::Error(Usage).
std::string fault_node(const std::string& spec, const Graph& graph);
std::unique_ptr<Backend> make_inductor_backend(const Program& program, const BackendOptions& options);
class WorkerBackend;
/// The shipped Inductor worker as a WorkerBackend (also used to export repro archives).
std::unique_ptr<WorkerBackend> make_inductor_worker(const Program& program, const BackendOptions& options);
std::unique_ptr<Backend> make_external_backend(const std::string& command, const Program& program, const BackendOptions& options);
std::unique_ptr<Backend> make_aoti_backend(const std::string& package, const Program& program, const BackendOptions& options);

/// `inner`, compiling each region (same nodes, inputs, outputs, exploded or not) once; `compiles`, when
/// given, is set to a function returning how many compiles reached `inner`.
std::unique_ptr<Backend> make_caching_backend(std::unique_ptr<Backend> inner, std::function<size_t()>* compiles = nullptr);

/// The in-process backends (eager, fault): regions run through the interpreter; `after_node` (may be
/// empty) sees every node's call and may change its outputs.
class InterpreterBackend : public Backend {
 public:
  InterpreterBackend(const Program& program, std::string name, std::function<void(const Node&, NodeCall&)> after_node,
                     std::optional<uint64_t> seed);
  std::string name() const override { return name_; }
  std::unique_ptr<CompiledRegion> compile(const RegionSpec& region, const std::vector<c10::IValue>& example_inputs) override;

 private:
  Interpreter interpreter_;
  std::string name_;
  RunOptions options_;
};

}  // namespace pt2diff
