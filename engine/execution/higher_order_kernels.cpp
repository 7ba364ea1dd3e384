// engine/execution/higher_order_kernels.cpp — higher-order ops run by interpreting their subgraphs.
#include <ATen/ops/stack.h>
#include <fmt/format.h>
#include <map>

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

}  // namespace

namespace {

using HopFactory = std::unique_ptr<Kernel> (*)(const Node& node, std::string& why);

/// Every higher-order op with a handler, by name (the part after torch.ops.higher_order.).
const std::map<std::string, HopFactory>& hop_factories() {
  static const std::map<std::string, HopFactory> table = {
      {"cond", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<CondKernel>(); }},
      {"while_loop", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<WhileLoopKernel>(); }},
      {"map_impl", [](const Node&, std::string&) -> std::unique_ptr<Kernel> { return std::make_unique<MapKernel>(); }},
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
