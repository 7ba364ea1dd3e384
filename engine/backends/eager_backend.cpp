// engine/backends/eager_backend.cpp — "eager": the interpreter in the graph's own dtypes. As the
// compiled side it measures the noise floor (compiled == eager, so every verdict passes).
#include <chrono>
#include <set>

#include "engine/backends/backends.h"

namespace pt2diff {

namespace {

class InterpretedRegion final : public CompiledRegion {
 public:
  InterpretedRegion(const Interpreter& interpreter, RegionSpec region, const RunOptions& options)
      : interpreter_(interpreter), region_(std::move(region)), options_(options) {
    // Nodes left eager are not the backend's: its after_node (the fault backend's planted fault) skips them.
    if (!region_.eager.empty() && options_.after_node) {
      std::set<NodeId> eager(region_.eager.begin(), region_.eager.end());
      options_.after_node = [eager = std::move(eager), hook = options.after_node](const Node& n, NodeCall& call) {
        if (!eager.count(n.id)) hook(n, call);
      };
    }
  }

  std::vector<c10::IValue> run(const std::vector<c10::IValue>& inputs) override {
    const auto start = std::chrono::steady_clock::now();
    auto outputs = interpreter_.run_region(region_, inputs, options_);
    last_run_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return outputs;
  }

 private:
  const Interpreter& interpreter_;
  RegionSpec region_;
  RunOptions options_;
};

}  // namespace

InterpreterBackend::InterpreterBackend(const Program& program, std::string name, std::function<void(const Node&, NodeCall&)> after_node,
                                       const BackendOptions& options)
    : interpreter_(program), name_(std::move(name)) {
  options_.after_node = std::move(after_node);
  interpreter_.set_seed(options.seed);
  const Device device = parse_device(options.device);
  interpreter_.set_devices(device, device);
}

std::unique_ptr<CompiledRegion> InterpreterBackend::compile(const RegionSpec& region, const std::vector<c10::IValue>&) {
  last_compile_seconds_ = 0;  // nothing to compile: kernels were planned when the backend was made
  return std::make_unique<InterpretedRegion>(interpreter_, region, options_);
}

std::unique_ptr<Backend> make_eager_backend(const Program& program, const BackendOptions& options) {
  return std::make_unique<InterpreterBackend>(program, "eager", nullptr, options);
}

}  // namespace pt2diff
