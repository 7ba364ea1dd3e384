// engine/hints/dtype_promotion.cpp — is the divergence a matter of where values are rounded? Three
// counterfactual runs of the culprit window answer it: "widened" (fp16/bf16 computed in fp32, rounded
// once at the output: a fused kernel keeping fp32 intermediates), "lowered" (the result rounded to
// bfloat16, from inputs rounded to bfloat16 or not: a kernel computing in less precision than the
// graph's dtype) and, when an op mixes floating dtypes, "demoted" (those ops computed in the lower of
// their input dtypes: a promotion other than PyTorch's). The compiled result is classified by which
// one it sits next to; each op's at::result_type is listed in the notes. A torch.autocast region in
// the window makes it a low-precision one (fp32 at its boundary, bf16 inside) and is named in the
// notes: its ops' dtypes come from autocast's op lists, which the widened run (fp32 throughout) drops.
#include <algorithm>
#include <fmt/format.h>

#include "engine/execution/promotion.h"
#include "engine/hints/hint_context.h"
#include "engine/load/archive.h"
#include "graphs/graph_text.h"

namespace pt2diff {

namespace {

double distance(const at::Tensor& a, const at::Tensor& b) { return measure(a.to(at::kDouble), b.to(at::kDouble)).rmse; }

bool low(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

at::Tensor bf16_round(const at::Tensor& t) { return t.to(at::kBFloat16).to(t.scalar_type()); }

std::string dtype_list(const std::vector<at::ScalarType>& types) {
  std::string s;
  for (at::ScalarType t : types) s += (s.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(t)));
  return s;
}

/// The window's torch.autocast regions (wrap_with_autocast nodes and those nested in its nodes' bodies).
std::vector<AutocastRegion> window_autocast(const HintContext& ctx) {
  std::vector<AutocastRegion> out;
  const Graph& g = ctx.program.ir.graph;
  for (NodeId id : ctx.window.nodes) {
    const Node& n = g.node(id);
    std::string why;
    if (auto r = autocast_region(n, why)) out.push_back(std::move(*r));
    for (const Subgraph* s : n.subgraphs())
      for (AutocastRegion& r : autocast_regions(*s->graph)) out.push_back(std::move(r));
  }
  return out;
}

/// An autocast region's ops take their dtypes from autocast's op lists, not from at::result_type.
std::string autocast_note(const AutocastRegion& r) {
  if (!r.enabled) return fmt::format("{}: autocast off on {} (its ops run in the dtypes of their inputs)", r.node, r.device_type);
  return fmt::format("{}: autocast {} {} over {} node{}: eager casts their inputs by autocast's op lists (not at::result_type); "
                     "the widened and fp64 runs ignore those casts", r.node, r.device_type, r.dtype, r.body_nodes.size(),
                     r.body_nodes.size() == 1 ? "" : "s");
}

/// Whether the window works in fp16/bf16: its judged result or one of its inputs does, or it holds
/// an autocast region to fp16/bf16 (fp32 in and out, low precision inside).
bool low_precision_window(const HintContext& ctx, const std::vector<AutocastRegion>& autocast) {
  bool low_precision = low(ctx.eager.scalar_type());
  for (const AutocastRegion& r : autocast)
    if (r.enabled && (r.dtype_value == DType::BFloat16 || r.dtype_value == DType::Half)) low_precision = true;
  for (const c10::IValue& v : ctx.inputs)
    if (v.isTensor() && low(v.toTensor().scalar_type())) low_precision = true;
  return low_precision;
}

/// The window with fp16/bf16 computed in fp32, its result rounded once to `dtype`.
at::Tensor widened_result(const HintContext& ctx, at::ScalarType dtype) {
  RunOptions widened_run;
  widened_run.precision = Precision::Widened;
  return ctx.interpreter.run_region(ctx.window, ctx.inputs, widened_run).at(ctx.judged).toTensor().to(dtype);
}

/// The window's inputs with every floating tensor rounded to bf16.
std::vector<c10::IValue> bf16_rounded_inputs(const HintContext& ctx) {
  std::vector<c10::IValue> rounded_inputs;
  for (const c10::IValue& v : ctx.inputs)
    rounded_inputs.push_back(v.isTensor() && v.toTensor().is_floating_point() ? c10::IValue(bf16_round(v.toTensor())) : v);
  return rounded_inputs;
}

/// A note on an op's promotion: its input dtypes, at::result_type and the dtypes the graph gives its outputs.
std::string promotion_note(const Graph& g, const Node& n, const Promotion& p) {
  std::string graph_dtypes;
  for (ValueId v : n.output_values())
    if (const Value& value = g.value(v); value.meta) graph_dtypes += (graph_dtypes.empty() ? "" : ", ") + std::string(dtype_name(value.meta->dtype));
  return fmt::format("{} ({}): inputs {}{} -> at::result_type {}; graph {}{}", n.name, short_target(n.target), dtype_list(p.tensor_inputs),
                     p.has_scalar ? " and a number" : "", dtype_name(static_cast<DType>(p.result_type)),
                     graph_dtypes.empty() ? "?" : graph_dtypes, p.mixed ? "  [mixed]" : "");
}

/// The window with its mixed-dtype ops computed in the lower of their input dtypes, and every op's promotion as a note.
struct DemotedRun {
  at::Tensor result;
  std::vector<std::string> notes;
  size_t mixed_ops = 0;
};

DemotedRun demoted_run(const HintContext& ctx) {
  const Graph& g = ctx.program.ir.graph;
  DemotedRun d;
  RunOptions demoting;
  demoting.after_node = [&](const Node& n, NodeCall& call) {
    // A higher-order op's operands are not promoted together: its body's ops are (autocast's by its lists).
    if (n.target.rfind("torch.ops.higher_order.", 0) == 0) return;
    auto p = promotion_of(call.inputs);
    if (!p) return;
    d.notes.push_back(promotion_note(g, n, *p));
    try {
      if (auto out = demoted_promotion(call)) {
        call.outputs = *out;
        ++d.mixed_ops;
      }
    } catch (const std::exception& e) {
      // An op whose mixed dtypes are its contract, not a promotion: native_layer_norm_backward on CUDA takes a
      // bfloat16 gradient with float32 statistics and refuses them demoted. It keeps its own result.
      d.notes.push_back(fmt::format("{} ({}): not demoted, its kernel refuses the lower dtype ({})", n.name, short_target(n.target),
                                    first_line(e.what())));
    }
  };
  d.result = ctx.interpreter.run_region(ctx.window, ctx.inputs, demoting).at(ctx.judged).toTensor();
  return d;
}

/// The distances (RMSE) the finding is read from: the compiled result to each counterfactual, and each to fp64.
struct PromotionDistances {
  double to_eager, to_widened, to_lowered, err_compiled, err_eager, err_widened, to_demoted;
  size_t mixed_ops;
};

std::vector<std::pair<std::string, double>> evidence(const PromotionDistances& d) {
  std::vector<std::pair<std::string, double>> e = {
      {"rmse_compiled_to_eager", d.to_eager},       {"rmse_compiled_to_widened", d.to_widened},
      {"rmse_compiled_to_lowered", d.to_lowered},   {"rmse_compiled_to_fp64", d.err_compiled},
      {"rmse_eager_to_fp64", d.err_eager},          {"rmse_widened_to_fp64", d.err_widened},
      {"mixed_dtype_ops", static_cast<double>(d.mixed_ops)}};
  if (d.mixed_ops) e.emplace_back("rmse_compiled_to_demoted", d.to_demoted);
  return e;
}

/// The finding, its summary and suggestion: the counterfactual the compiled result sits next to, if any.
void promotion_finding(Hint& h, const PromotionDistances& d, bool low_precision, const std::string& dtype_label) {
  // Nearer the widened run than eager's per-op rounding, and no less accurate than eager.
  if (low_precision && d.to_widened < d.to_eager && d.err_compiled <= d.err_eager * 1.01) {
    h.finding = "compiled_keeps_higher_precision";
    h.summary = fmt::format(
        "the compiled window matches the same ops computed in fp32 and rounded once to {} (RMSE {:.3g} to it, against {:.3g} to "
        "eager's per-op rounding) and is closer to fp64 than eager ({:.3g} vs {:.3g}): fused kernels keep fp32 intermediates",
        dtype_label, d.to_widened, d.to_eager, d.err_compiled, d.err_eager);
    h.suggestion = "benign: the compiled result is the more accurate one; --inductor-config emulate_precision_casts=True makes "
                   "Inductor round like eager if bit-level agreement matters";
  } else if (d.mixed_ops && d.err_compiled > 2 * d.err_eager && d.to_demoted < 0.5 * d.to_eager && d.to_demoted <= d.to_lowered) {
    h.finding = "promotion_differs_from_pytorch";
    h.summary = fmt::format(
        "the compiled window matches its {} mixed-dtype op{} computed in the lower input dtype (RMSE {:.3g} to that, against "
        "{:.3g} to eager) and is {:.3g}x farther from fp64 than eager: it promotes differently from at::result_type",
        d.mixed_ops, d.mixed_ops == 1 ? "" : "s", d.to_demoted, d.to_eager, d.err_eager > 0 ? d.err_compiled / d.err_eager : 0.0);
    h.suggestion = "a compiler bug (mixed-dtype promotion): report it with --repro; until fixed, cast the inputs of the [mixed] "
                   "ops to one dtype in the model";
  } else if (d.err_compiled > 2 * d.err_eager && d.to_lowered < 0.5 * d.to_eager) {
    h.finding = "lower_precision_than_promotion";
    h.summary = fmt::format(
        "the compiled window matches its result computed in bfloat16 (RMSE {:.3g} to it, against {:.3g} to eager) and is {:.3g}x "
        "farther from fp64 than eager: it computes in lower precision than the graph's {} requires",
        d.to_lowered, d.to_eager, d.err_eager > 0 ? d.err_compiled / d.err_eager : 0.0, dtype_label);
    h.suggestion = "a compiler bug (a lowering that drops precision): report it with --repro; until fixed, keep this op out "
                   "of the compiled region";
  } else {
    h.finding = "not_explained_by_promotion";
    h.summary = fmt::format(
        "neither fp32 intermediates (RMSE {:.3g} to the widened run) nor lower-precision rounding ({:.3g} to the lowered run) "
        "explains the compiled result ({:.3g} from eager): not a dtype-promotion effect",
        d.to_widened, d.to_lowered, d.to_eager);
    h.suggestion = d.err_compiled > 2 * d.err_eager
                       ? "look for a numeric bug in the compiled code of this window (wrong math, not rounding): see the repro"
                       : "the compiled result is about as accurate as eager's: see the reduction_order hint";
  }
}

}  // namespace

std::optional<Hint> dtype_promotion_hint(const HintContext& ctx) {
  // A random op draws another stream in the compiled code: rounding cannot be told apart from that.
  if (!ctx.compiled.defined() || !ctx.eager.is_floating_point() || !ctx.fp64.defined() || !ctx.random_nodes.empty())
    return std::nullopt;
  const at::ScalarType dtype = ctx.eager.scalar_type();
  const std::vector<AutocastRegion> autocast = window_autocast(ctx);
  const bool low_precision = low_precision_window(ctx, autocast);
  const at::Tensor widened = widened_result(ctx, dtype);
  // Lower precision: the eager result rounded to bf16, and the window run from bf16-rounded inputs.
  const std::vector<c10::IValue> rounded_inputs = bf16_rounded_inputs(ctx);
  // Each op's promotion as PyTorch computes it, and the window with the mixed ones demoted.
  DemotedRun demoted = demoted_run(ctx);
  const at::Tensor lowered_out = bf16_round(ctx.eager);
  const at::Tensor lowered_all = bf16_round(ctx.interpreter.run_region(ctx.window, rounded_inputs).at(ctx.judged).toTensor());

  PromotionDistances d;
  d.to_eager = distance(ctx.compiled, ctx.eager);
  d.to_widened = distance(ctx.compiled, widened);
  d.to_lowered = std::min(distance(ctx.compiled, lowered_out), distance(ctx.compiled, lowered_all));
  d.err_compiled = distance(ctx.compiled, ctx.fp64);
  d.err_eager = distance(ctx.eager, ctx.fp64);
  d.err_widened = distance(widened, ctx.fp64);
  d.mixed_ops = demoted.mixed_ops;
  d.to_demoted = d.mixed_ops ? distance(ctx.compiled, demoted.result) : 0;
  Hint h;
  h.kind = "dtype_promotion";
  h.notes = std::move(demoted.notes);
  for (const AutocastRegion& r : autocast) h.notes.push_back(autocast_note(r));
  h.evidence = evidence(d);
  promotion_finding(h, d, low_precision, std::string(dtype_name(static_cast<DType>(dtype))));
  return h;
}

}  // namespace pt2diff
