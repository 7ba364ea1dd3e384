// engine/execution/op_catalog.cpp — the single place that decides whether a target can run.
#include "engine/execution/op_catalog.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include "engine/execution/kernel.h"
#include <mutex>
#include <set>
#include <unordered_map>

namespace pt2diff {

namespace {

OpClass classify_uncached(const std::string& target) {
  if (is_scalar_op(target)) return {OpRoute::Scalar, ""};
  const std::string prefix = "torch.ops.";
  if (target.rfind(prefix, 0) != 0)
    return {OpRoute::Unsupported, "a Python callable, not an operator: pt2diff runs torch.ops.* and symbolic scalar ops only"};
  if (target.rfind(prefix + "higher_order.", 0) == 0) {
    if (has_higher_order_kernel(target.substr(prefix.size() + 13))) return {OpRoute::HigherOrder, ""};
    return {OpRoute::Unsupported, "a higher-order op pt2diff has no handler for (it runs cond, while_loop, map_impl, "
                                  "wrap_with_set_grad_enabled, wrap_with_autocast, invoke_subgraph, auto_functionalized)"};
  }
  auto name = parse_op_target(target);
  if (!name) return {OpRoute::Unsupported, "malformed operator name"};
  const std::string& ns = name->ns;
  if (ns == "prims")
    return {OpRoute::Unsupported, "a prims op (Python-only decomposition level): export with the default decompositions"};
  if (ns == "aten" && cuda_fused_attention_ops().count(name->name)) return {OpRoute::CpuSubstitute, ""};
  // Not the dispatcher's: its kernel needs a process group this process does not have (pt2diff dist simulates it).
  if (ns == "_c10d_functional") return {OpRoute::Collective, ""};
  if (auto op = c10::Dispatcher::singleton().findSchema({ns + "::" + name->name, name->overload})) {
    // The computed table counts composite kernels too, so this refuses only ops with no way to run on
    // the CPU, where pt2diff runs every graph: CUDA-only ops of a GPU export, ops with a Meta kernel only.
    if (!op->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU))
      return {OpRoute::Unsupported, "has no CPU kernel in this libtorch (a CUDA-only op?): pt2diff runs graphs on the CPU"};
    return {OpRoute::Dispatcher, ""};
  }
  if (ns == "aten")
    return {OpRoute::Unsupported, "not in this libtorch's dispatcher (an op newer than torch 2.13?)"};
  return {OpRoute::Unsupported,
          "not in the C++ dispatcher: a custom op defined in Python, or its C++ library is not loaded"};
}

}  // namespace

const std::set<std::string>& cuda_fused_attention_ops() {
  static const std::set<std::string> ops = {"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                                            "_scaled_dot_product_cudnn_attention"};
  return ops;
}

std::optional<OperatorName> parse_op_target(const std::string& target) {
  const std::string prefix = "torch.ops.";
  if (target.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = target.substr(prefix.size());
  const size_t first = rest.find('.'), last = rest.rfind('.');
  if (first == std::string::npos || first == 0 || first + 1 == rest.size()) return std::nullopt;
  OperatorName out;
  out.ns = rest.substr(0, first);
  out.name = first == last ? rest.substr(first + 1) : rest.substr(first + 1, last - first - 1);
  out.overload = first == last ? "" : rest.substr(last + 1);
  if (out.overload == "default") out.overload.clear();
  return out;
}

OpClass classify_op(const std::string& target) {
  static std::mutex mutex;
  static std::unordered_map<std::string, OpClass> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(target);
  if (it != cache.end()) return it->second;
  return cache.emplace(target, classify_uncached(target)).first->second;
}

const char* op_route_name(OpRoute route) {
  switch (route) {
    case OpRoute::Dispatcher: return "dispatcher";
    case OpRoute::HigherOrder: return "higher-order (subgraphs)";
    case OpRoute::Scalar: return "scalar (C++)";
    case OpRoute::CpuSubstitute: return "math attention (CUDA-only op)";
    case OpRoute::Collective: return "collective (pt2diff dist)";
    case OpRoute::Unsupported: return "unsupported";
  }
  return "?";
}

}  // namespace pt2diff
