// engine/hints/compiler_levers.cpp — re-compiles the culprit window with each compiler lever that can
// bear on it and says which one makes the divergence go away: the lever a user can pull today. Only
// for compilers in a worker (inductor, external), whose config the levers are.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "engine/execution/reduction_orders.h"
#include "engine/hints/hint_context.h"
#include "pt2diff/backend_spec.h"

namespace pt2diff {

namespace {

struct Lever {
  std::string name;        ///< as the evidence and the summary name it
  std::string how;         ///< the pt2diff option that pulls it
  std::string in_program;  ///< the same lever in the user's program
  std::string meaning;     ///< what its removing the divergence says
  std::function<bool(const HintContext&)> bears_on;
  /// Sets per-compile settings only (inductor_config, matmul_precision, no_tf32): the lever then compiles
  /// in the run's worker (Backend::with_compiler_settings), which applies no other option.
  std::function<void(BackendOptions&)> pull;
};

bool low_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

bool window_has_dtype(const HintContext& ctx, const std::function<bool(at::ScalarType)>& pred) {
  const Graph& g = ctx.program.ir.graph;
  auto dtype_of = [&](ValueId v) -> std::optional<at::ScalarType> {
    const Value& value = g.value(v);
    if (!value.meta) return std::nullopt;
    return static_cast<at::ScalarType>(static_cast<int8_t>(value.meta->dtype));
  };
  for (NodeId n : ctx.window.nodes) {
    for (ValueId v : g.node(n).input_values())
      if (auto t = dtype_of(v); t && pred(*t)) return true;
    for (ValueId v : g.node(n).output_values())
      if (auto t = dtype_of(v); t && pred(*t)) return true;
  }
  return false;
}

bool window_has_fp32_matmul(const HintContext& ctx) {
  static const std::vector<std::string> tf32_ops = {"mm", "bmm", "addmm", "baddbmm", "linear", "matmul", "convolution", "conv1d",
                                                    "conv2d", "conv3d", "scaled_dot_product_attention"};
  if (!window_has_dtype(ctx, [](at::ScalarType t) { return t == at::kFloat; })) return false;
  for (NodeId n : ctx.window.nodes)
    if (std::find(tf32_ops.begin(), tf32_ops.end(), reduction_op_name(ctx.program.ir.graph.node(n))) != tf32_ops.end()) return true;
  return false;
}

bool on_gpu(const HintContext& ctx) { return ctx.options.backend.device.rfind("cuda", 0) == 0; }

/// Some node of the window is one of `ops` (names as reduction_op_name gives them: "div", "exp").
bool window_has_op(const HintContext& ctx, const std::vector<std::string>& ops) {
  for (NodeId n : ctx.window.nodes)
    if (std::find(ops.begin(), ops.end(), reduction_op_name(ctx.program.ir.graph.node(n))) != ops.end()) return true;
  return false;
}

/// Some node of the window writes in place into a storage another node or the caller sees (StorageModel).
bool window_writes(const HintContext& ctx) {
  if (!ctx.storage) return false;
  return std::any_of(ctx.window.nodes.begin(), ctx.window.nodes.end(),
                     [&](NodeId n) { return !ctx.storage->writes[static_cast<size_t>(n)].empty(); });
}

bool window_has_float(const HintContext& ctx) { return window_has_dtype(ctx, [](at::ScalarType t) { return at::isFloatingType(t); }); }

// What Triton computes differently from eager's CUDA kernels, op by op (torch/_inductor/config.py).
const std::vector<std::string> kDividing = {"div", "reciprocal", "true_divide", "_softmax", "softmax", "_log_softmax", "log_softmax",
                                            "native_layer_norm", "layer_norm", "rms_norm", "_fused_rms_norm", "mean", "var_mean",
                                            "var", "native_group_norm", "group_norm", "_native_batch_norm_legit_no_training"};
const std::vector<std::string> kLibdevice = {"exp", "exp2", "expm1", "log", "log2", "log1p", "pow", "erf", "erfc", "tanh", "sigmoid",
                                             "gelu", "silu", "softplus", "_softmax", "softmax", "_log_softmax", "log_softmax",
                                             "rsqrt", "sqrt", "sin", "cos", "atan2"};
const std::vector<std::string> kReducing = {"sum", "mean", "amax", "amin", "var", "var_mean", "_softmax", "softmax", "_log_softmax",
                                            "log_softmax", "native_layer_norm", "layer_norm", "rms_norm", "_fused_rms_norm",
                                            "native_group_norm", "group_norm", "mm", "bmm", "addmm", "baddbmm", "linear", "matmul",
                                            "convolution", "cumsum", "prod", "norm", "linalg_vector_norm"};

const std::vector<Lever>& levers() {
  static const std::vector<Lever> all = {
      {"emulate_precision_casts", "--inductor-config emulate_precision_casts=True",
       "torch._inductor.config.emulate_precision_casts = True",
       "the difference is Inductor keeping fp32 between fp16/bf16 ops where eager rounds after each",
       [](const HintContext& ctx) { return window_has_dtype(ctx, low_precision); },
       [](BackendOptions& o) { o.inductor_config.push_back("emulate_precision_casts=True"); }},
      {"tf32_off", "--no-tf32",
       "torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False",
       "the difference is TF32 (10-bit mantissa) in fp32 matmuls or convolutions",
       [](const HintContext& ctx) {
         const bool tf32_possible = ctx.options.backend.device.rfind("cuda", 0) == 0 &&
                                    !ctx.options.backend.no_tf32;  // cuDNN convolutions default to TF32 on CUDA
         return tf32_possible && window_has_fp32_matmul(ctx);
       },
       [](BackendOptions& o) { o.no_tf32 = true; }},
      // The GPU levers: Triton's numerics against eager's CUDA kernels, one knob at a time. A knob the
      // worker's torch lacks fails its compile at once (bad_request) and is noted as tried.
      {"division_rounding", "--inductor-config eager_numerics.division_rounding=True",
       "torch._inductor.config.eager_numerics.division_rounding = True",
       "the difference is Triton's approximate fp32 division (div.full) where eager's kernels round exactly (div_rn)",
       [](const HintContext& ctx) { return on_gpu(ctx) && window_has_float(ctx) && window_has_op(ctx, kDividing); },
       [](BackendOptions& o) { o.inductor_config.push_back("eager_numerics.division_rounding=True"); }},
      {"disable_ftz", "--inductor-config eager_numerics.disable_ftz=True", "torch._inductor.config.eager_numerics.disable_ftz = True",
       "the difference is Triton flushing fp32 denormals to zero in its math functions, which eager keeps",
       [](const HintContext& ctx) { return on_gpu(ctx) && window_has_float(ctx) && window_has_op(ctx, kLibdevice); },
       [](BackendOptions& o) { o.inductor_config.push_back("eager_numerics.disable_ftz=True"); }},
      {"use_pytorch_libdevice", "--inductor-config eager_numerics.use_pytorch_libdevice=True",
       "torch._inductor.config.eager_numerics.use_pytorch_libdevice = True",
       "the difference is Triton's bundled libdevice (pow, erf, log about 1 ulp from the CUDA toolkit's that eager uses)",
       [](const HintContext& ctx) { return on_gpu(ctx) && window_has_float(ctx) && window_has_op(ctx, kLibdevice); },
       [](BackendOptions& o) { o.inductor_config.push_back("eager_numerics.use_pytorch_libdevice=True"); }},
      {"deterministic", "--inductor-config deterministic=True", "torch._inductor.config.deterministic = True",
       "the difference is an autotuning choice (a reduction config or GEMM picked by timing at compile time): with one "
       "stable choice the window agrees",
       [](const HintContext& ctx) { return on_gpu(ctx) && window_has_float(ctx) && window_has_op(ctx, kReducing); },
       [](BackendOptions& o) { o.inductor_config.push_back("deterministic=True"); }},
      {"strict_numerics", "--inductor-config numerics='strict'", "torch._inductor.config.numerics = 'strict'",
       "the difference is Triton's reduction order: in torch's strict-numerics mode (2.14 and later) CUDA sums follow eager's order",
       [](const HintContext& ctx) { return on_gpu(ctx) && window_has_float(ctx) && window_has_op(ctx, kReducing); },
       [](BackendOptions& o) { o.inductor_config.push_back("numerics='strict'"); }},
      {"fallback_random", "--inductor-config fallback_random=True", "torch._inductor.config.fallback_random = True",
       "the difference is Inductor's own random number generation: with eager's kernels, seeded alike, the streams agree",
       [](const HintContext& ctx) { return !ctx.random_nodes.empty(); },
       [](BackendOptions& o) { o.inductor_config.push_back("fallback_random=True"); }},
      // Where the window writes in place: how Inductor keeps the writes (hints/aliasing.cpp).
      {"max_fusion_size", "--inductor-config max_fusion_size=1", "torch._inductor.config.max_fusion_size = 1",
       "the difference is a fused kernel that reads a storage and writes it in place in one loop: once fused, it reads "
       "values it has already overwritten (or misses ones it should see); unfused, each kernel sees the program's order",
       [](const HintContext& ctx) { return window_writes(ctx); },
       [](BackendOptions& o) { o.inductor_config.push_back("max_fusion_size=1"); }},
      {"inplace_buffers", "--inductor-config inplace_buffers=False", "torch._inductor.config.inplace_buffers = False",
       "the difference is Inductor reusing an input's buffer for a kernel's output in place while the input is still read",
       [](const HintContext& ctx) { return window_writes(ctx); },
       [](BackendOptions& o) { o.inductor_config.push_back("inplace_buffers=False"); }},
      {"fallback_by_default", "--inductor-config fallback_by_default=True", "torch._inductor.config.fallback_by_default = True",
       "the difference is in the code Inductor generates for these ops (with every op on its ATen kernel the window agrees): "
       "a lowering or fusion changes the numbers",
       [](const HintContext&) { return true; },
       [](BackendOptions& o) { o.inductor_config.push_back("fallback_by_default=True"); }},
  };
  return all;
}

}  // namespace

std::optional<Hint> compiler_lever_hint(const HintContext& ctx) {
  const std::string& spec = ctx.options.compiled;
  if (!BackendSpec::parse(spec).takes_compiler_config()) return std::nullopt;
  const Verdict before = judge(ctx.compiled, ctx.eager, ctx.fp64, ctx.options.rule);
  Hint h;
  h.kind = "compiler_lever";
  h.evidence = {{"rmse_to_fp64_without", measure(ctx.compiled, ctx.fp64).rmse}};
  const Lever* removes = nullptr;
  std::vector<std::string> tried;
  for (const Lever& lever : levers()) {
    if (!lever.bears_on(ctx)) continue;
    BackendOptions with_lever = ctx.options.backend;
    lever.pull(with_lever);
    try {
      // In the run's worker where it can (a lever is per-compile config): no new worker per lever.
      std::unique_ptr<Backend> backend = ctx.backend ? ctx.backend->with_compiler_settings(with_lever) : nullptr;
      if (!backend) backend = make_backend(spec, ctx.program, with_lever);
      const c10::IValue out = backend->compile(ctx.window, ctx.inputs)->run(ctx.inputs).at(ctx.judged);
      if (!out.isTensor()) continue;
      const at::Tensor again = out.toTensor();
      const Verdict after = judge(again, ctx.eager, ctx.fp64, ctx.options.rule);
      h.evidence.emplace_back("rmse_to_fp64_with_" + lever.name, measure(again, ctx.fp64).rmse);
      h.evidence.emplace_back("rmse_to_eager_with_" + lever.name, measure(again.to(at::kDouble), ctx.eager.to(at::kDouble)).rmse);
      h.notes.push_back(fmt::format("{}: the window {} ({}: {})", lever.name,
                                    after.level == Level::Pass ? "passes" : after.pass ? "passes, suspicious" : "still fails", after.reason,
                                    after.detail));
      tried.push_back(lever.name);
      // Removes it: a failing window passes, a suspicious one (--localize-suspicious) is no longer
      // suspicious, or (explain on a passing node) the difference to eager halves.
      const double to_eager_before = measure(ctx.compiled.to(at::kDouble), ctx.eager.to(at::kDouble)).rmse;
      const double to_eager_after = measure(again.to(at::kDouble), ctx.eager.to(at::kDouble)).rmse;
      const bool no_longer_suspicious = before.level == Level::Suspicious && after.level == Level::Pass;
      if (after.pass && (!before.pass || no_longer_suspicious || (to_eager_before > 0 && to_eager_after <= 0.5 * to_eager_before))) {
        removes = &lever;  // the most specific lever that removes it: the others would cost compiles for nothing
        break;
      }
    } catch (const BackendFailure& f) {
      h.notes.push_back(fmt::format("{}: re-compiling failed ({}): {}", lever.name, f.kind_name(), f.what()));
    }
  }
  if (tried.empty() && h.notes.empty()) return std::nullopt;
  if (removes) {
    h.finding = "lever_removes_divergence";
    h.summary = fmt::format("with {} the window {}: {}", removes->name,
                            !before.pass ? "passes"
                            : before.level == Level::Suspicious ? "is no longer suspicious (or comes at least twice closer to eager)"
                                                                : "comes (at least twice) closer to eager",
                            removes->meaning);
    h.suggestion = fmt::format("pt2diff: {}; in your program: {}", removes->how, removes->in_program);
  } else {
    h.finding = "lever_does_not_remove_divergence";
    h.summary = fmt::format("the window still {} with each lever tried ({})", before.pass ? "differs" : "fails", fmt::join(tried, ", "));
    h.suggestion = "no compiler setting removes it: read the repro's generated code (TORCH_LOGS=output_code)";
  }
  return h;
}

}  // namespace pt2diff
