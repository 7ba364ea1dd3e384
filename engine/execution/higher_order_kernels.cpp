// engine/execution/higher_order_kernels.cpp — higher-order ops run by interpreting their subgraphs.
#include <ATen/ops/stack.h>
#include <fmt/format.h>
#include <map>

#include "engine/execution/autocast_guard.h"
#include "engine/execution/kernel.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

/// The tensors (and scalars) of an operand argument, in order.
std::vector<c10::IValue> operands(const Argument& a, const Frame& f, const Graph& g) {
  std::vector<c10::IValue> out;
  switch (a.kind) {
    case Argument::Kind::Tensors:
      for (ValueId v : a.as<std::vector<ValueId>>()) out.push_back(f.at(v, g));
      break;
    case Argument::Kind::Tensor: out.push_back(f.at(a.as<ValueId>(), g)); break;
    default:
      if (c10::IValue n = scalar_value(a, f, g); !n.isNone()) out.push_back(std::move(n));
      break;
  }
  return out;
}

bool predicate(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().item<bool>();
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  return v.toDouble() != 0.0;
}

void store_all(const Node& node, std::vector<c10::IValue> results, Frame& f) {
  if (node.outputs.size() == 1 && node.outputs[0].kind == Argument::Kind::Tensors) {
    c10::List<at::Tensor> list;
    for (const c10::IValue& r : results) list.push_back(r.toTensor());
    store_output(node.outputs[0], list, f);
    return;
  }
  if (results.size() < node.outputs.size())
    throw Error(Error::Kind::Internal, fmt::format("node '{}' ({}) produced {} values for {} outputs", node.name, node.target,
                                                   results.size(), node.outputs.size()));
  for (size_t i = 0; i < node.outputs.size(); ++i) store_output(node.outputs[i], std::move(results[i]), f);
}

/// torch.cond(pred, true_graph, false_graph, operands)
class CondKernel final : public Kernel {
 public:
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    const auto subs = node.subgraphs();
    if (node.inputs.size() < 4 || subs.size() != 2)
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}': cond needs a predicate, two branches and operands", node.name));
    c10::IValue pred = node.inputs[0].arg.kind == Argument::Kind::Tensor ? f.at(node.inputs[0].arg.as<ValueId>(), g)
                                                                          : operands(node.inputs[0].arg, f, g).at(0);
    const Graph& branch = *(predicate(pred) ? subs[0] : subs[1])->graph;
    store_all(node, ctx.run_subgraph(branch, operands(node.inputs[3].arg, f, g)), f);
  }
};

/// while_loop(cond_graph, body_graph, carried_inputs, additional_inputs)
class WhileLoopKernel final : public Kernel {
 public:
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    const auto subs = node.subgraphs();
    if (node.inputs.size() < 4 || subs.size() != 2)
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}': while_loop needs cond, body, carried and extra inputs", node.name));
    std::vector<c10::IValue> carried = operands(node.inputs[2].arg, f, g);
    const std::vector<c10::IValue> extra = operands(node.inputs[3].arg, f, g);
    auto with_extra = [&](std::vector<c10::IValue> v) {
      v.insert(v.end(), extra.begin(), extra.end());
      return v;
    };
    while (predicate(ctx.run_subgraph(*subs[0]->graph, with_extra(carried)).at(0)))
      carried = ctx.run_subgraph(*subs[1]->graph, with_extra(carried));
    store_all(node, std::move(carried), f);
  }
};

/// map_impl(body_graph, xs, additional_inputs): body on every row of xs, results stacked.
class MapKernel final : public Kernel {
 public:
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    const auto subs = node.subgraphs();
    if (node.inputs.size() < 3 || subs.size() != 1)
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}': map needs a body, mapped inputs and extra inputs", node.name));
    const std::vector<c10::IValue> xs = operands(node.inputs[1].arg, f, g);
    const std::vector<c10::IValue> extra = operands(node.inputs[2].arg, f, g);
    if (xs.empty()) throw Error(Error::Kind::BadArchive, fmt::format("node '{}': map over no inputs", node.name));
    const int64_t rows = xs.front().toTensor().size(0);
    std::vector<std::vector<at::Tensor>> per_output;
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<c10::IValue> args;
      for (const c10::IValue& x : xs) args.push_back(x.toTensor().select(0, i));
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<c10::IValue> outs = ctx.run_subgraph(*subs[0]->graph, std::move(args));
      per_output.resize(outs.size());
      for (size_t k = 0; k < outs.size(); ++k) per_output[k].push_back(outs[k].toTensor());
    }
    std::vector<c10::IValue> stacked;
    for (const auto& parts : per_output) stacked.push_back(at::stack(parts));
    store_all(node, std::move(stacked), f);
  }
};


/// The operands of a region HOP: every input after its body (`first`), in order, flattened.
std::vector<c10::IValue> operands_from(const Node& node, size_t first, const Frame& f, const Graph& g) {
  std::vector<c10::IValue> out;
  for (size_t i = first; i < node.inputs.size(); ++i)
    for (c10::IValue& v : operands(node.inputs[i].arg, f, g)) out.push_back(std::move(v));
  return out;
}

/// wrap_with_set_grad_enabled(enabled, body, *operands) and invoke_subgraph(body, identifier, *operands):
/// the body on the operands. pt2diff runs every graph without autograd (inference mode), so a
/// `torch.no_grad()` / `torch.enable_grad()` region computes what it computes in eager.
class BodyKernel final : public Kernel {
 public:
  BodyKernel(size_t body, size_t first_operand) : body_(body), first_(first_operand) {}
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    const Graph& body = *node.inputs[body_].arg.as<Subgraph>().graph;
    store_all(node, ctx.run_subgraph(body, operands_from(node, first_, f, g)), f);
  }

 private:
  size_t body_, first_;
};

std::unique_ptr<Kernel> make_set_grad_kernel(const Node& node, std::string& why) {
  if (node.inputs.size() < 2 || node.inputs[0].arg.kind != Argument::Kind::Bool || node.inputs[1].arg.kind != Argument::Kind::Graph) {
    why = "wrap_with_set_grad_enabled without (enabled, body, operands...) arguments";
    return nullptr;
  }
  return std::make_unique<BodyKernel>(1, 2);
}

std::unique_ptr<Kernel> make_invoke_subgraph_kernel(const Node& node, std::string& why) {
  if (node.inputs.empty() || node.inputs[0].arg.kind != Argument::Kind::Graph) {
    why = "invoke_subgraph without (body, identifier, operands...) arguments";
    return nullptr;
  }
  // The identifier (a string, or None) is not an operand of the body.
  const size_t first = node.inputs.size() > 1 && (node.inputs[1].arg.kind == Argument::Kind::String ||
                                                  node.inputs[1].arg.kind == Argument::Kind::None)
                           ? 2 : 1;
  return std::make_unique<BodyKernel>(0, first);
}

/// wrap_with_autocast(device_type, dtype, enabled, cache_enabled, body, *operands): a
/// `torch.autocast` region. The native run runs the body under ATen's autocast for the device and
/// dtype (or with it off, for `enabled=False` inside another region), so each op is cast by autocast's
/// own op lists, as in eager. The fp64 and widened runs run it without autocast: its down-casts are what
/// they measure against (a fix-up says so).
class AutocastKernel final : public Kernel {
 public:
  explicit AutocastKernel(AutocastRegion region) : region_(std::move(region)) {}
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    const Graph& body = *node.inputs[4].arg.as<Subgraph>().graph;
    std::vector<c10::IValue> in = operands_from(node, 5, f, g);
    if (ctx.precision != Precision::Native) {
      if (ctx.fixups && region_.enabled)
        ctx.fixups->insert(fmt::format("wrap_with_autocast: autocast to {} ignored (the body runs in float64)", region_.dtype));
      store_all(node, ctx.run_subgraph(body, std::move(in)), f);
      return;
    }
    const Device as_exported{region_.device_type, -1};
    AutocastGuard guard(run_device(as_exported, ctx).type(), region_.enabled, dtype_, region_.cache_enabled);
    store_all(node, ctx.run_subgraph(body, std::move(in)), f);
  }
  std::string device_rewrite() const override {
    return region_.device_type == "cpu" || !region_.enabled ? "" : fmt::format("autocast {} -> cpu (CPU autocast's op lists)", region_.device_type);
  }
  void set_dtype(c10::ScalarType d) { dtype_ = d; }

 private:
  AutocastRegion region_;
  c10::ScalarType dtype_ = c10::kBFloat16;
};

std::unique_ptr<Kernel> make_autocast_kernel(const Node& node, std::string& why) {
  std::optional<AutocastRegion> region = autocast_region(node, why);
  if (!region) return nullptr;
  const DType d = region->dtype_value;
  if (d != DType::BFloat16 && d != DType::Half && d != DType::Float) {
    why = fmt::format("autocast to {}: pt2diff runs autocast regions to bfloat16, float16 or float32", region->dtype);
    return nullptr;
  }
  auto k = std::make_unique<AutocastKernel>(*region);
  k->set_dtype(static_cast<c10::ScalarType>(static_cast<int8_t>(d)));
  return k;
}

}  // namespace

namespace {

using HopFactory = std::unique_ptr<Kernel> (*)(const Node& node, std::string& why);

/// Every higher-order op with a handler, by name (the part after torch.ops.higher_order.).
const std::map<std::string, HopFactory>& hop_factories() {
  static const std::map<std::string, HopFactory> table = {
      {"cond", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<CondKernel>(); }},
      {"while_loop", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<WhileLoopKernel>(); }},
      {"map_impl", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<MapKernel>(); }},
      {"wrap_with_set_grad_enabled", make_set_grad_kernel},
      {"wrap_with_autocast", make_autocast_kernel},
      {"invoke_subgraph", make_invoke_subgraph_kernel},
      {"auto_functionalized", make_auto_functionalized_kernel},
      {"auto_functionalized_v2", make_auto_functionalized_kernel},
  };
  return table;
}

constexpr const char* kHopPrefix = "torch.ops.higher_order.";

}  // namespace

bool has_higher_order_kernel(const std::string& name) { return hop_factories().count(name) > 0; }

std::unique_ptr<Kernel> make_higher_order_kernel(const Node& node, std::string& why) {
  const std::string prefix = kHopPrefix;
  if (node.target.rfind(prefix, 0) == 0)
    if (auto it = hop_factories().find(node.target.substr(prefix.size())); it != hop_factories().end()) return it->second(node, why);
  why = "a higher-order op pt2diff has no handler for yet";
  return nullptr;
}

}  // namespace pt2diff
