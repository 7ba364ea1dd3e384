// engine/hints/reduction_order.cpp — could summation order alone explain the compiled result? The
// window's last op, when it is a reduction, is recomputed in other orders with its own kernel in the
// native dtype (reversed; blocks of 16, 64, 256; split in two): the spread of their errors to fp64 is
// the envelope ordinary reordering produces. Compiled error inside it is reordering noise.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "engine/execution/reduction_orders.h"
#include "engine/hints/hint_context.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

double unit_roundoff(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return std::ldexp(1.0, -8);
    case at::kHalf: return std::ldexp(1.0, -11);
    case at::kFloat: return std::ldexp(1.0, -24);
    default: return std::ldexp(1.0, -53);
  }
}

}  // namespace

std::optional<Hint> reduction_order_hint(const HintContext& ctx) {
  if (!ctx.compiled.defined() || ctx.window.nodes.empty() || !ctx.eager.is_floating_point()) return std::nullopt;
  const Graph& g = ctx.program.ir.graph;
  const Node& last = g.node(ctx.window.nodes.back());
  const auto& ops = reorderable_ops();
  if (std::find(ops.begin(), ops.end(), reduction_op_name(last)) == ops.end()) return std::nullopt;

  // One run of the window per order, the last node's outputs replaced by that order's result.
  int64_t length = 0;
  auto run_with = [&](const std::function<std::optional<std::vector<c10::IValue>>(NodeCall&)>& order) -> std::optional<at::Tensor> {
    bool applied = false;
    RunOptions o;
    o.after_node = [&](const Node& n, NodeCall& call) {
      if (n.id != last.id) return;
      length = reduction_length(n, call.inputs);
      if (auto out = order(call)) {
        call.outputs = *out;
        applied = true;
      }
    };
    try {
      auto outs = ctx.interpreter.run_region(ctx.window, ctx.inputs, o);
      if (!applied || !outs.at(ctx.judged).isTensor()) return std::nullopt;
      return outs.at(ctx.judged).toTensor();
    } catch (const Error&) {
      return std::nullopt;  // an order this op cannot take (grouped convolution, ...)
    }
  };
  std::vector<std::pair<std::string, double>> orders;
  auto consider = [&](const std::string& name, const std::optional<at::Tensor>& out) {
    if (out) orders.emplace_back(name, measure(*out, ctx.fp64).rmse);
  };
  consider("reversed", run_with([&](NodeCall& c) { return std::optional(reversed_order(last, c)); }));
  for (int64_t block : {16, 64, 256})
    consider(fmt::format("blocked_{}", block), run_with([&](NodeCall& c) { return blocked_order(last, c, block); }));
  consider("split_in_two", run_with([&](NodeCall& c) { return blocked_order(last, c, (reduction_length(last, c.inputs) + 1) / 2); }));
  if (orders.empty()) return std::nullopt;

  const double err_eager = measure(ctx.eager, ctx.fp64).rmse, err_compiled = measure(ctx.compiled, ctx.fp64).rmse;
  double low = err_eager, high = err_eager;
  for (const auto& [name, err] : orders) {
    low = std::min(low, err);
    high = std::max(high, err);
  }
  const at::ScalarType dtype = ctx.eager.scalar_type();
  const double scale = ctx.fp64.numel() ? ctx.fp64.pow(2).mean().sqrt().item<double>() : 0;
  const double model = unit_roundoff(dtype) * std::sqrt(static_cast<double>(std::max<int64_t>(length, 1))) * scale;
  Hint h;
  h.kind = "reduction_order";
  h.evidence = {{"reduction_length", static_cast<double>(length)}, {"sqrt_n_eps_estimate", model},
                {"envelope_low", low},   {"envelope_high", high},
                {"rmse_eager_to_fp64", err_eager}, {"rmse_compiled_to_fp64", err_compiled}};
  for (const auto& [name, err] : orders) h.evidence.emplace_back("rmse_" + name + "_to_fp64", err);
  // A quarter of slack: the envelope samples a few orders out of many.
  if (err_compiled <= 1.25 * high) {
    h.finding = "inside_envelope";
    h.summary = fmt::format("{} ({}, N = {}) summed in {} other orders lands {:.3g} .. {:.3g} from fp64 (RMSE); the compiled "
                            "result is {:.3g}: within what summation order alone produces (sqrt(N)*eps estimate {:.3g})",
                            last.name, short_target(last.target), length, orders.size(), low, high, err_compiled, model);
    h.suggestion = "reordering noise, benign: loosen --tol, or judge with --rule cosine or ulp:N";
  } else {
    h.finding = "outside_envelope";
    h.summary = fmt::format("{} ({}, N = {}) summed in {} other orders lands {:.3g} .. {:.3g} from fp64 (RMSE); the compiled "
                            "result is {:.3g}, {:.1f}x the worst order: not explained by summation order",
                            last.name, short_target(last.target), length, orders.size(), low, high, err_compiled,
                            high > 0 ? err_compiled / high : 0.0);
    h.suggestion = "check the compiled reduction's accumulator dtype and its math (see the dtype_promotion hint and the repro)";
  }
  return h;
}

}  // namespace pt2diff
