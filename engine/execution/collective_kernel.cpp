// engine/execution/collective_kernel.cpp — a functional collective (_c10d_functional.*) run by the interpreter:
// wait_tensor passes its tensor on (the collective's result is ready when the call returns); the collectives ask
// the run's ExecContext::collective, which `pt2diff dist` answers from every rank (engine/dist/lockstep.cpp).
#include <fmt/format.h>

#include "engine/execution/kernel.h"
#include "graphs/collectives.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

class CollectiveKernel final : public Kernel {
 public:
  explicit CollectiveKernel(CollectiveCall call) : call_(std::move(call)) {}

  void run(const Node& node, const Graph& graph, Frame& frame, const ExecContext& ctx) const override {
    const c10::IValue& in = frame.at(call_.input, graph);
    if (!in.isTensor())
      throw Error(Error::Kind::Internal, fmt::format("node '{}': its input is not a tensor", node.name));
    if (call_.op == CollectiveCall::Op::Wait) {
      store_output(node.outputs.at(0), in, frame);
      return;
    }
    if (!ctx.collective || !*ctx.collective)
      throw Error(Error::Kind::Unsupported,
                  fmt::format("node '{}' is a collective ({} over group '{}'): its result needs every rank's value; run the "
                              "ranks' captured graphs together with `pt2diff dist DIR` (docs/distributed.md)",
                              node.name, collective_op_name(call_.op), call_.group));
    store_output(node.outputs.at(0), (*ctx.collective)(node, in.toTensor()), frame);
  }
  bool output_may_alias_input() const override { return call_.op == CollectiveCall::Op::Wait; }
  std::vector<std::string> output_alias_arguments() const override {
    return {call_.op == CollectiveCall::Op::Wait ? "tensor" : ""};
  }

 private:
  CollectiveCall call_;
};

}  // namespace

std::unique_ptr<Kernel> make_collective_kernel(const Node& node, std::string& why) {
  auto call = collective_call(node, why);
  if (!call) return nullptr;
  return std::make_unique<CollectiveKernel>(std::move(*call));
}

}  // namespace pt2diff
