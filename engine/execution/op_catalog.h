// engine/execution/op_catalog.h — how pt2diff runs each node target, decided before anything runs.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace pt2diff {

/// How a node's target is executed.
enum class OpRoute {
  Dispatcher,   ///< an ATen or C++-registered op, called by name through the c10 dispatcher
  HigherOrder,  ///< a higher-order op the engine runs by interpreting its subgraphs
  Scalar,       ///< a symbolic scalar op (_operator.*, torch.sym_*, math.*) computed in C++
  CpuSubstitute,  ///< a CUDA-only op (fused attention) run on the CPU as its reference form
  Collective,   ///< a functional collective (_c10d_functional.*): its result comes from every rank (RunOptions::collective)
  Unsupported,  ///< nothing in this process can run it
};

struct OpClass {
  OpRoute route = OpRoute::Unsupported;
  std::string reason;  ///< for Unsupported: why, and what a user can do
};

/// `torch.ops.aten.add.Tensor` → {"aten", "add", "Tensor"}; the overload "default" becomes "".
struct OperatorName {
  std::string ns, name, overload;
};
/// nullopt when `target` is not of the form torch.ops.<ns>.<name>[.<overload>].
std::optional<OperatorName> parse_op_target(const std::string& target);

/// Classifies a node target such as "torch.ops.aten.add.Tensor" or "_operator.mul".
/// Dispatcher lookups are cached; safe to call from several threads.
OpClass classify_op(const std::string& target);
const char* op_route_name(OpRoute route);
/// The CUDA-only fused attention ops (aten names: "_scaled_dot_product_flash_attention", ...) that a graph
/// exported on a GPU holds and the CPU has no kernel for: the engine runs them as math attention
/// (fused_attention_kernel.cpp), and sends this list to the worker at `load`, which does the same for
/// Inductor (docs/worker-protocol.md). The one list of them.
const std::set<std::string>& cuda_fused_attention_ops();

}  // namespace pt2diff
