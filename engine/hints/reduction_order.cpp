// engine/hints/reduction_order.cpp — could summation order alone explain the compiled result? Every
// reduction of the window (matmuls, convolutions, sums, means, softmaxes) is recomputed in other
// orders with its own kernel in the native dtype (reversed; blocks of 16, 64, 256; pairwise; split in
// two), all reductions in the same order per run: the spread of the window's errors to fp64 is the
// envelope ordinary reordering produces. Compiled error inside it is reordering noise.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
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

/// A summation order: the outputs of one reduction computed in it, or nothing where it does not apply.
using Order = std::function<std::optional<std::vector<c10::IValue>>(const Node&, NodeCall&)>;

bool reorderable(const Node& n) {
  const auto& ops = reorderable_ops();
  return std::find(ops.begin(), ops.end(), reduction_op_name(n)) != ops.end();
}

/// The window's reductions, in window order.
std::vector<const Node*> window_reductions(const HintContext& ctx) {
  const Graph& g = ctx.program.ir.graph;
  std::vector<const Node*> reductions;
  for (NodeId id : ctx.window.nodes)
    if (reorderable(g.node(id))) reductions.push_back(&g.node(id));
  return reductions;
}

/// One run of the window with every reduction's outputs replaced by that order's result (each one's length
/// recorded in `lengths`); nothing where no reduction took the order or some op cannot take it.
std::optional<at::Tensor> run_in_order(const HintContext& ctx, const Order& order, std::map<std::string, int64_t>& lengths) {
  size_t applied = 0;
  RunOptions o;
  o.after_node = [&](const Node& n, NodeCall& call) {
    if (!reorderable(n)) return;
    lengths[n.name] = reduction_length(n, call.inputs);
    if (auto out = order(n, call)) {
      call.outputs = *out;
      ++applied;
    }
  };
  try {
    auto outs = ctx.interpreter.run_region(ctx.window, ctx.inputs, o);
    if (!applied || !outs.at(ctx.judged).isTensor()) return std::nullopt;
    return outs.at(ctx.judged).toTensor();
  } catch (const Error&) {
    return std::nullopt;  // an order some op cannot take (grouped convolution, ...)
  }
}

/// Each order the window could be run in, with the RMSE of its result to fp64.
std::vector<std::pair<std::string, double>> order_errors(const HintContext& ctx, std::map<std::string, int64_t>& lengths) {
  std::vector<std::pair<std::string, double>> orders;
  auto consider = [&](const std::string& name, const Order& order) {
    if (auto out = run_in_order(ctx, order, lengths)) orders.emplace_back(name, measure(*out, ctx.fp64).rmse);
  };
  consider("reversed", [&](const Node& n, NodeCall& c) { return std::optional(reversed_order(n, c)); });
  for (int64_t block : {16, 64, 256})
    consider(fmt::format("blocked_{}", block), [&](const Node& n, NodeCall& c) { return blocked_order(n, c, block); });
  consider("pairwise", [&](const Node& n, NodeCall& c) { return blocked_order(n, c, 8, Combine::Pairwise); });
  consider("split_in_two", [&](const Node& n, NodeCall& c) { return blocked_order(n, c, (reduction_length(n, c.inputs) + 1) / 2); });
  return orders;
}

/// The spread of errors to fp64 that summation order produces (eager's own order included), against the compiled error.
struct Envelope {
  double low, high;            // RMSE to fp64, best and worst order
  double err_eager, err_compiled;
  double model;                // the sqrt(N)*eps estimate
  int64_t length;              // the longest reduction
};

Envelope envelope(const HintContext& ctx, const std::vector<std::pair<std::string, double>>& orders, int64_t length) {
  Envelope e;
  e.length = length;
  e.err_eager = measure(ctx.eager, ctx.fp64).rmse;
  e.err_compiled = measure(ctx.compiled, ctx.fp64).rmse;
  e.low = e.err_eager;
  e.high = e.err_eager;
  for (const auto& [name, err] : orders) {
    e.low = std::min(e.low, err);
    e.high = std::max(e.high, err);
  }
  const at::ScalarType dtype = ctx.eager.scalar_type();
  const double scale = ctx.fp64.numel() ? ctx.fp64.pow(2).mean().sqrt().item<double>() : 0;
  e.model = unit_roundoff(dtype) * std::sqrt(static_cast<double>(std::max<int64_t>(length, 1))) * scale;
  return e;
}

/// The finding, its summary and suggestion: below, inside or outside the envelope. `what` names the reductions.
void envelope_finding(Hint& h, const Envelope& e, const std::string& what, size_t orders) {
  // A quarter of slack: the envelope samples a few orders out of many.
  if (e.err_compiled < 0.8 * e.low) {
    h.finding = "below_envelope";
    h.summary = fmt::format("{} summed in {} other orders lands {:.3g} .. {:.3g} from fp64 (RMSE); the compiled result is {:.3g}, "
                            "more accurate than every order: the difference is precision, not summation order",
                            what, orders, e.low, e.high, e.err_compiled);
    h.suggestion = "benign: see the dtype_promotion hint (fp32 intermediates are the usual reason)";
  } else if (e.err_compiled <= 1.25 * e.high) {
    h.finding = "inside_envelope";
    h.summary = fmt::format("{} summed in {} other orders lands {:.3g} .. {:.3g} from fp64 (RMSE); the compiled "
                            "result is {:.3g}: within what summation order alone produces (sqrt(N)*eps estimate {:.3g})",
                            what, orders, e.low, e.high, e.err_compiled, e.model);
    h.suggestion = "reordering noise, benign: loosen --tol, or judge with --rule cosine or ulp:N";
  } else {
    h.finding = "outside_envelope";
    h.summary = fmt::format("{} summed in {} other orders lands {:.3g} .. {:.3g} from fp64 (RMSE); the compiled "
                            "result is {:.3g}, {:.1f}x the worst order: not explained by summation order",
                            what, orders, e.low, e.high, e.err_compiled, e.high > 0 ? e.err_compiled / e.high : 0.0);
    h.suggestion = "check the compiled reduction's accumulator dtype and its math (see the dtype_promotion hint and the repro)";
  }
}

}  // namespace

std::optional<Hint> reduction_order_hint(const HintContext& ctx) {
  if (!ctx.compiled.defined() || ctx.window.nodes.empty() || !ctx.eager.is_floating_point() || !ctx.random_nodes.empty())
    return std::nullopt;
  const std::vector<const Node*> reductions = window_reductions(ctx);
  if (reductions.empty()) return std::nullopt;
  std::map<std::string, int64_t> lengths;
  const std::vector<std::pair<std::string, double>> orders = order_errors(ctx, lengths);
  if (orders.empty()) return std::nullopt;
  int64_t length = 0;  // the longest reduction sets the sqrt(N) estimate
  for (const auto& [name, n] : lengths) length = std::max(length, n);
  const Node& last = *reductions.back();
  const Envelope e = envelope(ctx, orders, length);

  Hint h;
  h.kind = "reduction_order";
  for (const Node* n : reductions)
    h.notes.push_back(fmt::format("{} ({}): reduces N = {} terms per output element", n->name, short_target(n->target), lengths[n->name]));
  h.evidence = {{"reduction_length", static_cast<double>(length)}, {"sqrt_n_eps_estimate", e.model},
                {"envelope_low", e.low},   {"envelope_high", e.high},
                {"rmse_eager_to_fp64", e.err_eager}, {"rmse_compiled_to_fp64", e.err_compiled}};
  for (const auto& [name, err] : orders) h.evidence.emplace_back("rmse_" + name + "_to_fp64", err);
  const std::string what = reductions.size() == 1
                               ? fmt::format("{} ({}, N = {})", last.name, short_target(last.target), length)
                               : fmt::format("the window's {} reductions (longest N = {})", reductions.size(), length);
  envelope_finding(h, e, what, orders.size());
  return h;
}

}  // namespace pt2diff
