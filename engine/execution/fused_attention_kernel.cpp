// engine/execution/fused_attention_kernel.cpp — the CUDA-only fused attention ops of a graph exported
// on a GPU (flash, memory-efficient, cuDNN), run on the CPU as aten._scaled_dot_product_attention_math:
// the definition of scaled dot-product attention, with fp64 and CPU kernels, where the fused ops have
// neither (on a GPU, the native run calls the fused kernel itself). Only output 0 (the attention) is
// produced: logsumexp, RNG state and debug masks exist for
// backward, and a graph that reads them is refused before it runs.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>
#include <fmt/format.h>

#include "engine/execution/kernel.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

/// The node's result 0 keeps the strides the graph recorded: the fused kernels return (B, H, T, D)
/// over (B, T, H, D) memory, and later `view`s of the graph rely on that layout.
at::Tensor with_recorded_strides(const at::Tensor& out, const Value& value) {
  if (!value.meta || value.meta->strides.size() != static_cast<size_t>(out.dim())) return out;
  std::vector<int64_t> strides;
  for (const SymInt& s : value.meta->strides) {
    if (!s.is_static()) return out;  // dynamic strides: the math layout is the best available
    strides.push_back(*s.value);
  }
  if (out.strides() == c10::IntArrayRef(strides)) return out;
  at::Tensor laid_out = at::empty_strided(out.sizes(), strides, out.options());
  laid_out.copy_(out);
  return laid_out;
}

class FusedAttentionKernel final : public Kernel {
 public:
  FusedAttentionKernel(c10::OperatorHandle math, std::unique_ptr<Kernel> fused, const Node& node)
      : math_(std::move(math)), fused_kernel_(std::move(fused)), fused_(short_target(node.target)) {
    const NamedArgument* dropout = node.input("dropout_p");
    random_ = dropout && dropout->arg.kind == Argument::Kind::Float && dropout->arg.as<double>() != 0.0;
  }

  bool is_random() const override { return random_; }
  std::string device_rewrite() const override {
    return "a CUDA-only fused attention kernel, run as aten._scaled_dot_product_attention_math";
  }

  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    // On the GPU the native run calls the fused kernel itself, as eager does; the fp64 run (no fp64
    // fused kernels) and CPU runs use the math form.
    if (fused_kernel_ && ctx.device.is_cuda() && ctx.precision == Precision::Native) return fused_kernel_->run(node, g, f, ctx);
    if (ctx.fixups) ctx.fixups->insert(fmt::format("{}: CUDA fused kernel -> aten._scaled_dot_product_attention_math", fused_));
    auto tensor = [&](const char* name) -> c10::IValue {
      const NamedArgument* a = node.input(name);
      if (!a || a->arg.kind == Argument::Kind::None) return {};
      const ValueId v = a->arg.as<ValueId>();
      return v == kNoValue ? c10::IValue() : f.at(v, g);
    };
    auto number = [&](const char* name, c10::IValue fallback) -> c10::IValue {
      const NamedArgument* a = node.input(name);
      if (!a) return fallback;
      c10::IValue n = scalar_value(a->arg, f, g);
      return n.isNone() ? fallback : n;
    };
    const c10::IValue query = tensor("query"), key = tensor("key"), value = tensor("value");
    if (!query.isTensor() || !key.isTensor() || !value.isTensor())
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}' ({}) lacks query, key or value", node.name, fused_));
    c10::IValue mask = tensor("attn_bias");
    if (mask.isNone()) mask = tensor("attn_mask");
    c10::IValue dropout = number("dropout_p", 0.0);
    if (dropout.isInt()) dropout = static_cast<double>(dropout.toInt());
    // Grouped-query attention reaches the fused kernels with fewer key/value heads than query heads.
    const bool gqa = query.toTensor().dim() >= 3 && key.toTensor().dim() >= 3 &&
                     query.toTensor().size(-3) != key.toTensor().size(-3);
    // math(query, key, value, attn_mask, dropout_p, is_causal, dropout_mask, *, scale, enable_gqa)
    torch::jit::Stack stack{query, key, value, mask, dropout, number("is_causal", false), c10::IValue(),
                            number("scale", c10::IValue()), gqa};
    math_.callBoxed(stack);
    const std::vector<ValueId> out = node.outputs.empty() ? std::vector<ValueId>{} : node.outputs[0].values();
    if (!out.empty()) store_output(node.outputs[0], with_recorded_strides(stack.at(0).toTensor(), g.value(out[0])), f);
  }

 private:
  c10::OperatorHandle math_;
  std::unique_ptr<Kernel> fused_kernel_;  ///< the node's own op (null when this libtorch lacks it)
  std::string fused_;
  bool random_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_fused_attention_kernel(const Node& node, const Graph& graph, std::string& why) {
  for (size_t i = 1; i < node.outputs.size(); ++i)
    for (ValueId v : node.outputs[i].values()) {
      const Value& used = graph.value(v);
      if (!used.users.empty() || used.is_graph_output) {
        why = fmt::format("reads output {} ('{}') of the CUDA-only fused attention, which pt2diff runs on the CPU as "
                          "aten._scaled_dot_product_attention_math (attention output only): export the model for inference",
                          i, used.name);
        return nullptr;
      }
    }
  auto math = c10::Dispatcher::singleton().findSchema({"aten::_scaled_dot_product_attention_math", ""});
  if (!math) {
    why = "a CUDA-only fused attention, and this libtorch has no aten._scaled_dot_product_attention_math to run it";
    return nullptr;
  }
  std::string no_fused;
  return std::make_unique<FusedAttentionKernel>(*math, make_dispatcher_kernel(node, no_fused), node);
}

}  // namespace pt2diff
