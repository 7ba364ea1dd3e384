// engine/hints/dtype_promotion.cpp — is the divergence a matter of where values are rounded? Three
// counterfactual runs of the culprit window answer it: "widened" (fp16/bf16 computed in fp32, rounded
// once at the output: a fused kernel keeping fp32 intermediates), "lowered" (the result rounded to
// bfloat16, from inputs rounded to bfloat16 or not: a kernel computing in less precision than the
// graph's dtype) and, when an op mixes floating dtypes, "demoted" (those ops computed in the lower of
// their input dtypes: a promotion other than PyTorch's). The compiled result is classified by which
// one it sits next to; each op's at::result_type is listed in the notes.
#include <algorithm>
#include <fmt/format.h>

#include "engine/execution/promotion.h"
#include "engine/hints/hint_context.h"
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

}  // namespace

std::optional<Hint> dtype_promotion_hint(const HintContext& ctx) {
  // A random op draws another stream in the compiled code: rounding cannot be told apart from that.
  if (!ctx.compiled.defined() || !ctx.eager.is_floating_point() || !ctx.fp64.defined() || !ctx.random_nodes.empty())
    return std::nullopt;
  const at::ScalarType dtype = ctx.eager.scalar_type();
  bool low_precision_window = low(dtype);
  for (const c10::IValue& v : ctx.inputs)
    if (v.isTensor() && low(v.toTensor().scalar_type())) low_precision_window = true;

  RunOptions widened_run;
  widened_run.precision = Precision::Widened;
  const at::Tensor widened = ctx.interpreter.run_region(ctx.window, ctx.inputs, widened_run).at(ctx.judged).toTensor().to(dtype);
  // Lower precision: the eager result rounded to bf16, and the window run from bf16-rounded inputs.
  std::vector<c10::IValue> rounded_inputs;
  for (const c10::IValue& v : ctx.inputs)
    rounded_inputs.push_back(v.isTensor() && v.toTensor().is_floating_point() ? c10::IValue(bf16_round(v.toTensor())) : v);
  // Each op's promotion as PyTorch computes it, and the window with the mixed ones demoted.
  const Graph& g = ctx.program.ir.graph;
  std::vector<std::string> notes;
  size_t mixed_ops = 0;
  RunOptions demoting;
  demoting.after_node = [&](const Node& n, NodeCall& call) {
    auto p = promotion_of(call.inputs);
    if (!p) return;
    std::string graph_dtypes;
    for (ValueId v : n.output_values())
      if (const Value& value = g.value(v); value.meta) graph_dtypes += (graph_dtypes.empty() ? "" : ", ") + std::string(dtype_name(value.meta->dtype));
    notes.push_back(fmt::format("{} ({}): inputs {}{} -> at::result_type {}; graph {}{}", n.name, short_target(n.target),
                                dtype_list(p->tensor_inputs), p->has_scalar ? " and a number" : "", dtype_name(static_cast<DType>(p->result_type)),
                                graph_dtypes.empty() ? "?" : graph_dtypes, p->mixed ? "  [mixed]" : ""));
    if (auto out = demoted_promotion(call)) {
      call.outputs = *out;
      ++mixed_ops;
    }
  };
  const at::Tensor demoted = ctx.interpreter.run_region(ctx.window, ctx.inputs, demoting).at(ctx.judged).toTensor();
  const at::Tensor lowered_out = bf16_round(ctx.eager);
  const at::Tensor lowered_all = bf16_round(ctx.interpreter.run_region(ctx.window, rounded_inputs).at(ctx.judged).toTensor());

  const double to_eager = distance(ctx.compiled, ctx.eager), to_widened = distance(ctx.compiled, widened);
  const double to_lowered = std::min(distance(ctx.compiled, lowered_out), distance(ctx.compiled, lowered_all));
  const double err_compiled = distance(ctx.compiled, ctx.fp64), err_eager = distance(ctx.eager, ctx.fp64),
               err_widened = distance(widened, ctx.fp64);
  const double to_demoted = mixed_ops ? distance(ctx.compiled, demoted) : 0;
  Hint h;
  h.kind = "dtype_promotion";
  h.notes = std::move(notes);
  h.evidence = {{"rmse_compiled_to_eager", to_eager},       {"rmse_compiled_to_widened", to_widened},
                {"rmse_compiled_to_lowered", to_lowered},   {"rmse_compiled_to_fp64", err_compiled},
                {"rmse_eager_to_fp64", err_eager},          {"rmse_widened_to_fp64", err_widened},
                {"mixed_dtype_ops", static_cast<double>(mixed_ops)}};
  if (mixed_ops) h.evidence.emplace_back("rmse_compiled_to_demoted", to_demoted);
  const std::string dtype_label(dtype_name(static_cast<DType>(dtype)));
  // Nearer the widened run than eager's per-op rounding, and no less accurate than eager.
  if (low_precision_window && to_widened < to_eager && err_compiled <= err_eager * 1.01) {
    h.finding = "compiled_keeps_higher_precision";
    h.summary = fmt::format(
        "the compiled window matches the same ops computed in fp32 and rounded once to {} (RMSE {:.3g} to it, against {:.3g} to "
        "eager's per-op rounding) and is closer to fp64 than eager ({:.3g} vs {:.3g}): fused kernels keep fp32 intermediates",
        dtype_label, to_widened, to_eager, err_compiled, err_eager);
    h.suggestion = "benign: the compiled result is the more accurate one; --inductor-config emulate_precision_casts=True makes "
                   "Inductor round like eager if bit-level agreement matters";
  } else if (mixed_ops && err_compiled > 2 * err_eager && to_demoted < 0.5 * to_eager && to_demoted <= to_lowered) {
    h.finding = "promotion_differs_from_pytorch";
    h.summary = fmt::format(
        "the compiled window matches its {} mixed-dtype op{} computed in the lower input dtype (RMSE {:.3g} to that, against "
        "{:.3g} to eager) and is {:.3g}x farther from fp64 than eager: it promotes differently from at::result_type",
        mixed_ops, mixed_ops == 1 ? "" : "s", to_demoted, to_eager, err_eager > 0 ? err_compiled / err_eager : 0.0);
    h.suggestion = "a compiler bug (mixed-dtype promotion): report it with --repro; until fixed, cast the inputs of the [mixed] "
                   "ops to one dtype in the model";
  } else if (err_compiled > 2 * err_eager && to_lowered < 0.5 * to_eager) {
    h.finding = "lower_precision_than_promotion";
    h.summary = fmt::format(
        "the compiled window matches its result computed in bfloat16 (RMSE {:.3g} to it, against {:.3g} to eager) and is {:.3g}x "
        "farther from fp64 than eager: it computes in lower precision than the graph's {} requires",
        to_lowered, to_eager, err_eager > 0 ? err_compiled / err_eager : 0.0, dtype_label);
    h.suggestion = "a compiler bug (a lowering that drops precision): report it with --repro; until fixed, keep this op out "
                   "of the compiled region";
  } else {
    h.finding = "not_explained_by_promotion";
    h.summary = fmt::format(
        "neither fp32 intermediates (RMSE {:.3g} to the widened run) nor lower-precision rounding ({:.3g} to the lowered run) "
        "explains the compiled result ({:.3g} from eager): not a dtype-promotion effect",
        to_widened, to_lowered, to_eager);
    h.suggestion = err_compiled > 2 * err_eager
                       ? "look for a numeric bug in the compiled code of this window (wrong math, not rounding): see the repro"
                       : "the compiled result is about as accurate as eager's: see the reduction_order hint";
  }
  return h;
}

}  // namespace pt2diff
