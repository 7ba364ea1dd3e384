// engine/backends/fault_backend.cpp — "fault:WHERE:KIND[=AMOUNT]": the eager backend with one planted,
// deterministic fault. Tests and benchmarks use it to exercise localization without a compiler, and
// the docs use it to show what a real divergence looks like.
//
//   WHERE   a node name ("mm_1"), or OP#K: the K-th node (1-based, graph order) whose op is OP
//           ("aten.mm#2", "mm#2" and "aten.mm.default#2" all name the same node)
//   KIND    scale[=d]   every floating output times (1 + d)                       (d = 0.01)
//           noise[=s]   plus s * RMS(output) * N(0, 1), from a generator seeded by the node's name (s = 0.01)
//           bf16        rounded to bfloat16 and back: a promotion bug
//           reorder     the op recomputed with its reduction in reverse order (mm, bmm, addmm, baddbmm,
//                       linear, matmul, convolution, sum, mean, softmax, log_softmax)
//           nan         the first element becomes NaN
//           demote      an op with mixed floating inputs (bf16 + fp32) computed in the lower dtype: a
//                       promotion that differs from PyTorch's
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "engine/backends/backends.h"
#include "engine/execution/op_catalog.h"
#include "engine/execution/promotion.h"
#include "engine/execution/reduction_orders.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

enum class FaultKind { Scale, Noise, Bf16, Reorder, Nan, Demote };

struct Fault {
  FaultKind kind = FaultKind::Scale;
  double amount = 0.01;
  std::string node;  ///< the node it is planted at
};

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  throw Error(Error::Kind::Usage, fmt::format("--compiled fault:{}: {} (form: fault:NODE|OP#K:scale[=d]|noise[=s]|bf16|reorder|nan|demote)",
                                              spec, why));
}

/// "aten.mm.default" → "mm"; "aten.mm" → "mm"; "mm" → "mm".
std::string op_name(std::string op) {
  if (op.rfind("aten.", 0) == 0) op = op.substr(5);
  if (auto dot = op.find('.'); dot != std::string::npos) op = op.substr(0, dot);
  return op;
}

std::string node_op(const Node& n) { return reduction_op_name(n); }

const Node& find_node(const Graph& g, const std::string& spec, const std::string& where) {
  if (auto hash = where.rfind('#'); hash != std::string::npos) {
    const std::string op = op_name(where.substr(0, hash));
    int64_t k = 0;
    try {
      k = std::stoll(where.substr(hash + 1));
    } catch (const std::exception&) {
      bad_spec(spec, fmt::format("'{}' is not a number", where.substr(hash + 1)));
    }
    int64_t seen = 0;
    for (const Node& n : g.nodes())
      if (node_op(n) == op && ++seen == k) return n;
    bad_spec(spec, fmt::format("the graph has {} node{} of op '{}', not {}", seen, seen == 1 ? "" : "s", op, k));
  }
  for (const Node& n : g.nodes())
    if (n.name == where) return n;
  std::vector<std::string> names;
  for (const Node& n : g.nodes())
    if (names.size() < 8) names.push_back(n.name);
  bad_spec(spec, fmt::format("no node named '{}' (nodes: {}{})", where, fmt::join(names, ", "), g.nodes().size() > 8 ? ", ..." : ""));
}

Fault parse_fault(const std::string& spec, const Graph& g) {
  auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) bad_spec(spec, "no KIND");
  Fault f;
  const Node& node = find_node(g, spec, spec.substr(0, colon));
  f.node = node.name;
  std::string kind = spec.substr(colon + 1);
  std::string amount;
  if (auto eq = kind.find('='); eq != std::string::npos) {
    amount = kind.substr(eq + 1);
    kind = kind.substr(0, eq);
  }
  if (kind == "scale") f.kind = FaultKind::Scale;
  else if (kind == "noise") f.kind = FaultKind::Noise;
  else if (kind == "bf16") f.kind = FaultKind::Bf16;
  else if (kind == "reorder") f.kind = FaultKind::Reorder;
  else if (kind == "nan") f.kind = FaultKind::Nan;
  else if (kind == "demote") f.kind = FaultKind::Demote;
  else bad_spec(spec, fmt::format("unknown kind '{}'", kind));
  if (!amount.empty()) {
    if (f.kind != FaultKind::Scale && f.kind != FaultKind::Noise) bad_spec(spec, fmt::format("'{}' takes no amount", kind));
    try {
      size_t used = 0;
      f.amount = std::stod(amount, &used);
      if (used != amount.size()) throw std::invalid_argument(amount);
    } catch (const std::exception&) {
      bad_spec(spec, fmt::format("amount '{}' is not a number", amount));
    }
  }
  if (f.kind == FaultKind::Reorder) {
    const auto& ops = reorderable_ops();
    if (std::find(ops.begin(), ops.end(), node_op(node)) == ops.end())
      bad_spec(spec, fmt::format("node '{}' is {}, which has no reduction to reorder (reorder works on {})", node.name,
                                 short_target(node.target), fmt::join(ops, ", ")));
  }
  if (f.kind == FaultKind::Demote) {
    std::vector<DType> floating;
    for (ValueId v : node.input_values())
      if (const Value& value = g.value(v); value.meta && is_floating(value.meta->dtype)) floating.push_back(value.meta->dtype);
    if (std::adjacent_find(floating.begin(), floating.end(), std::not_equal_to<>()) == floating.end())
      bad_spec(spec, fmt::format("node '{}' ({}) has no inputs of two floating dtypes to demote", node.name, short_target(node.target)));
  }
  return f;
}

uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same noise on every run and machine
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

void plant(const Fault& f, const Node& n, NodeCall& call) {
  if (n.name != f.node) return;
  if (f.kind == FaultKind::Reorder) {
    call.outputs = reversed_order(n, call);
    return;
  }
  if (f.kind == FaultKind::Demote) {
    if (auto out = demoted_promotion(call)) call.outputs = *out;
    return;
  }
  for (c10::IValue& v : call.outputs) {
    if (!v.isTensor() || !v.toTensor().is_floating_point()) continue;
    at::Tensor t = v.toTensor();
    switch (f.kind) {
      case FaultKind::Scale: t = t.mul(1 + f.amount); break;
      case FaultKind::Noise: {
        at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed_of(n.name));
        at::Tensor z = at::randn(t.sizes(), gen, t.options().dtype(at::kDouble).device(at::kCPU));
        at::Tensor wide = t.to(at::kDouble);
        const double rms = wide.numel() ? wide.pow(2).mean().sqrt().item<double>() : 0;
        t = wide.add(z.to(t.device()), f.amount * rms).to(t.scalar_type());
        break;
      }
      case FaultKind::Bf16: t = t.to(at::kBFloat16).to(t.scalar_type()); break;
      case FaultKind::Nan:
        t = t.clone();  // same strides: later views of it stay valid
        if (t.numel()) t.as_strided({1}, {1}, t.storage_offset()).fill_(std::numeric_limits<double>::quiet_NaN());
        break;
      case FaultKind::Reorder: case FaultKind::Demote: break;
    }
    // An op writing in place (add_, index_put_, copy_) returns the storage it wrote: the fault lands there, as a
    // wrong write would, and every view and later reader of that storage sees it.
    const at::Tensor& out = v.toTensor();
    const std::string op = node_op(n);
    const bool writes = !op.empty() && op.back() == '_' &&
                        std::any_of(call.inputs.begin(), call.inputs.end(), [&](const c10::IValue& in) {
                          return in.isTensor() && in.toTensor().defined() && in.toTensor().is_alias_of(out);
                        });
    if (writes)
      out.copy_(t);
    else
      v = t;
  }
}

std::string describe(const Fault& f) {
  switch (f.kind) {
    case FaultKind::Scale: return fmt::format("fault: scale by 1{:+g} at {}", f.amount, f.node);
    case FaultKind::Noise: return fmt::format("fault: noise {:g} x RMS at {}", f.amount, f.node);
    case FaultKind::Bf16: return fmt::format("fault: bf16 rounding at {}", f.node);
    case FaultKind::Reorder: return fmt::format("fault: reversed reduction order at {}", f.node);
    case FaultKind::Nan: return fmt::format("fault: NaN at {}", f.node);
    case FaultKind::Demote: return fmt::format("fault: demoted mixed-dtype promotion at {}", f.node);
  }
  return "fault";
}

}  // namespace

std::string fault_spec_for_window(const std::string& spec, const Graph& g, const std::vector<NodeId>& window, bool exported_on_cpu) {
  const std::string planted = parse_fault(spec, g).node;
  const std::string kind = spec.substr(spec.rfind(':') + 1);
  // The op part of a target, as fault specs name it: "torch.ops.aten.mm.default" → "aten.mm".
  auto op_of = [](const Node& n) {
    std::string t = short_target(n.target);
    auto dot = t.rfind('.');
    return dot == std::string::npos ? t : t.substr(0, dot);
  };
  for (NodeId id : window) {
    const Node& n = g.node(id);
    if (n.name != planted) continue;
    int k = 0;
    for (NodeId before : window)
      if (before <= id && op_of(g.node(before)) == op_of(n)) ++k;
    const bool substituted = exported_on_cpu && classify_op(n.target).route == OpRoute::CpuSubstitute;
    return fmt::format("{}#{}:{}", substituted ? "aten._scaled_dot_product_attention_math" : op_of(n), k, kind);
  }
  return spec;
}

std::unique_ptr<Backend> make_fault_backend(const std::string& spec, const Program& program, const BackendOptions& options) {
  Fault fault = parse_fault(spec, program.ir.graph);
  return std::make_unique<InterpreterBackend>(
      program, describe(fault), [fault](const Node& n, NodeCall& call) { plant(fault, n, call); }, options);
}

}  // namespace pt2diff
