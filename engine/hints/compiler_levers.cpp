// engine/hints/compiler_levers.cpp — re-compiles the culprit window with a compiler lever and says
// whether the divergence goes away: the lever a user can pull today. Only for compilers in a worker
// (inductor, external), whose config the lever is.
#include <fmt/format.h>

#include "engine/hints/hint_context.h"

namespace pt2diff {

std::optional<Hint> compiler_lever_hint(const HintContext& ctx) {
  const std::string& spec = ctx.options.compiled;
  if (spec != "inductor" && spec.rfind("external:", 0) != 0) return std::nullopt;
  const std::string lever = "emulate_precision_casts=True";
  BackendOptions with_lever = ctx.options.backend;
  with_lever.inductor_config.push_back(lever);
  Hint h;
  h.kind = "compiler_lever";
  try {
    auto backend = make_backend(spec, ctx.program, with_lever);
    auto compiled = backend->compile(ctx.window, ctx.inputs);
    const at::Tensor again = compiled->run(ctx.inputs).at(ctx.judged).toTensor();
    const Verdict before = judge(ctx.compiled, ctx.eager, ctx.fp64, ctx.options.rule);
    const Verdict after = judge(again, ctx.eager, ctx.fp64, ctx.options.rule);
    const double err_before = measure(ctx.compiled, ctx.fp64).rmse, err_after = measure(again, ctx.fp64).rmse;
    h.evidence = {{"rmse_to_fp64_without", err_before}, {"rmse_to_fp64_with", err_after},
                  {"rmse_to_eager_with", measure(again.to(at::kDouble), ctx.eager.to(at::kDouble)).rmse}};
    if (!before.pass && after.pass) {
      h.finding = "lever_removes_divergence";
      h.summary = fmt::format("with --inductor-config {} the window passes ({}: {})", lever, after.reason, after.detail);
      h.suggestion = fmt::format("add --inductor-config {} (torch._inductor.config.{}) if eager's rounding is what you want", lever,
                                 lever.substr(0, lever.find('=')));
    } else {
      h.finding = "lever_does_not_remove_divergence";
      h.summary = fmt::format("with --inductor-config {} the window still fails ({}: {})", lever, after.reason, after.detail);
      h.suggestion = "the divergence is not Inductor's fp32 intermediates";
    }
  } catch (const BackendFailure& f) {
    h.finding = "lever_does_not_remove_divergence";
    h.summary = fmt::format("re-compiling with {} failed: {}", lever, f.what());
    h.suggestion = "";
  }
  return h;
}

}  // namespace pt2diff
