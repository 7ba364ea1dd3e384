// engine/execution/kernel_factory.cpp — the one place a node's kernel is chosen.
#include <fmt/format.h>

#include "engine/execution/autocast_guard.h"
#include "engine/execution/kernel.h"
#include "engine/execution/op_catalog.h"
#include "graphs/inline_region.h"
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

namespace {

/// A node inlined out of an autocast region (graphs/inline_region.h): its own kernel, run under the
/// region's autocast in the native run, as inside the region; the fp64 and widened runs ignore the
/// autocast, as they do for the region (a fix-up says so).
class UnderAutocast final : public Kernel {
 public:
  UnderAutocast(std::unique_ptr<Kernel> inner, std::string device_type, std::string dtype_name, c10::ScalarType dtype, bool enabled,
                bool cache)
      : inner_(std::move(inner)), device_type_(std::move(device_type)), dtype_name_(std::move(dtype_name)), dtype_(dtype),
        enabled_(enabled), cache_(cache) {}
  void run(const Node& node, const Graph& graph, Frame& frame, const ExecContext& ctx) const override {
    if (ctx.precision != Precision::Native) {
      if (ctx.fixups && enabled_)
        ctx.fixups->insert(fmt::format("wrap_with_autocast: autocast to {} ignored (the body runs in float64)", dtype_name_));
      inner_->run(node, graph, frame, ctx);
      return;
    }
    AutocastGuard guard(run_device(Device{device_type_, -1}, ctx).type(), enabled_, dtype_, cache_);
    inner_->run(node, graph, frame, ctx);
  }
  bool is_random() const override { return inner_->is_random(); }
  bool mutates_inputs() const override { return inner_->mutates_inputs(); }
  std::vector<std::string> written_arguments() const override { return inner_->written_arguments(); }
  bool output_may_alias_input() const override { return inner_->output_may_alias_input(); }
  std::vector<std::string> output_alias_arguments() const override { return inner_->output_alias_arguments(); }
  std::string device_rewrite() const override { return inner_->device_rewrite(); }

 private:
  std::unique_ptr<Kernel> inner_;
  std::string device_type_, dtype_name_;
  c10::ScalarType dtype_;
  bool enabled_, cache_;
};

/// `kernel` under the autocast of `node`'s kAutocastMetadata ("cpu,bfloat16,1,0"), when it has one.
std::unique_ptr<Kernel> with_autocast(std::unique_ptr<Kernel> kernel, const Node& node, std::string& why) {
  auto tag = node.metadata.find(kAutocastMetadata);
  if (!kernel || tag == node.metadata.end()) return kernel;
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = tag->second.find(',', start);
    parts.push_back(tag->second.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::optional<DType> dtype;
  for (DType d : {DType::BFloat16, DType::Half, DType::Float})
    if (parts.size() == 4 && parts[1] == dtype_name(d)) dtype = d;
  if (!dtype) {
    why = fmt::format("{} '{}': expected DEVICE,bfloat16|float16|float32,ENABLED,CACHE", kAutocastMetadata, tag->second);
    return nullptr;
  }
  return std::make_unique<UnderAutocast>(std::move(kernel), parts[0], parts[1], static_cast<c10::ScalarType>(static_cast<int8_t>(*dtype)),
                                         parts[2] == "1", parts[3] == "1");
}

std::unique_ptr<Kernel> make_kernel_of_op(const Node& node, const Graph& graph, std::string& why) {
  OpClass c = classify_op(node.target);
  switch (c.route) {
    case OpRoute::Dispatcher: return make_dispatcher_kernel(node, why);
    case OpRoute::CpuSubstitute: return make_fused_attention_kernel(node, graph, why);
    case OpRoute::Scalar: return make_scalar_kernel(node, why);
    case OpRoute::Collective: return make_collective_kernel(node, why);
    case OpRoute::HigherOrder: return make_higher_order_kernel(node, why);
    case OpRoute::Unsupported: why = c.reason; return nullptr;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_kernel(const Node& node, const Graph& graph, std::string& why) {
  return with_autocast(make_kernel_of_op(node, graph, why), node, why);
}

}  // namespace pt2diff
