// engine/execution/kernel_factory.cpp — the one place a node's kernel is chosen.
#include <fmt/format.h>

#include "engine/execution/kernel.h"
#include "engine/execution/op_catalog.h"
#include "pt2diff/error.h"

namespace pt2diff {

const c10::IValue& Frame::at(ValueId v, const Graph& g) const {
  const c10::IValue& value = values.at(static_cast<size_t>(v));
  if (value.isNone() && g.value(v).kind == ValueKind::Tensor)
    throw Error(Error::Kind::Internal, fmt::format("value '{}' read after it was freed or before it was set", g.value(v).name));
  return value;
}

c10::Device run_device(const Device& d, const ExecContext& ctx) {
  if (d.type == "meta") return c10::Device(c10::kMeta);
  if (ctx.device.is_cpu()) return c10::Device(c10::kCPU);
  if (d.type == ctx.export_device_type || d.type == "cuda") return ctx.device;
  return c10::Device(d.index < 0 ? d.type : fmt::format("{}:{}", d.type, d.index));
}

c10::IValue sym_value(const SymArg& s, const Frame& frame, const Graph& graph) {
  if (!s.is_literal()) return frame.at(s.value, graph);
  return std::visit([](auto x) { return c10::IValue(x); }, s.literal);
}

c10::IValue scalar_value(const Argument& a, const Frame& frame, const Graph& graph) {
  switch (a.kind) {
    case Argument::Kind::Int: return a.as<int64_t>();
    case Argument::Kind::Float: return a.as<double>();
    case Argument::Kind::Bool: return a.as<bool>();
    case Argument::Kind::SymInt: case Argument::Kind::SymFloat: case Argument::Kind::SymBool:
      return sym_value(a.as<SymArg>(), frame, graph);
    default: return c10::IValue();
  }
}

void store_output(const Argument& out, c10::IValue value, Frame& frame) {
  auto slot = [&](ValueId v) -> c10::IValue& { return frame.values.at(static_cast<size_t>(v)); };
  switch (out.kind) {
    case Argument::Kind::Tensor:
    case Argument::Kind::OptionalTensor:
      if (out.as<ValueId>() != kNoValue) slot(out.as<ValueId>()) = std::move(value);
      break;
    case Argument::Kind::Tensors:
    case Argument::Kind::OptionalTensors: {
      const auto& ids = out.as<std::vector<ValueId>>();
      auto list = value.toListRef();
      for (size_t i = 0; i < ids.size() && i < list.size(); ++i)
        if (ids[i] != kNoValue) slot(ids[i]) = list[i];
      break;
    }
    case Argument::Kind::SymInt:
    case Argument::Kind::SymFloat:
    case Argument::Kind::SymBool:
      if (!out.as<SymArg>().is_literal()) slot(out.as<SymArg>().value) = std::move(value);
      break;
    default:
      break;  // as_none and literal outputs carry nothing to keep
  }
}

std::unique_ptr<Kernel> make_kernel(const Node& node, const Graph& graph, std::string& why) {
  OpClass c = classify_op(node.target);
  switch (c.route) {
    case OpRoute::Dispatcher: return make_dispatcher_kernel(node, why);
    case OpRoute::CpuSubstitute: return make_fused_attention_kernel(node, graph, why);
    case OpRoute::Scalar: return make_scalar_kernel(node, why);
    case OpRoute::HigherOrder: return make_higher_order_kernel(node, why);
    case OpRoute::Unsupported: why = c.reason; return nullptr;
  }
  return nullptr;
}

}  // namespace pt2diff
