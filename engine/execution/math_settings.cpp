// engine/execution/math_settings.cpp — at::globalContext()'s float32 settings, set and put back.
#include "engine/execution/math_settings.h"

#include <ATen/Context.h>
#include <fmt/format.h>

#include "engine/load/archive.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

std::string precision_name(at::Float32MatmulPrecision p) {
  switch (p) {
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
    case at::Float32MatmulPrecision::HIGHEST: break;
  }
  return "highest";
}

}  // namespace

MathSettingsScope::MathSettingsScope(const BackendOptions& options) {
  if (options.matmul_precision.empty() && !options.no_tf32) return;
  at::Context& ctx = at::globalContext();
  try {
    precision_ = precision_name(ctx.float32MatmulPrecision());
    cudnn_tf32_ = ctx.allowTF32CuDNN();
    changed_ = true;
    // Only the two legacy setters, which keep torch's legacy and per-backend fp32 settings in step
    // (torch 2.13 raises on reading a mixed state, e.g. precision high then cuBLAS TF32 set off).
    // TF32 off is precision highest for cuBLAS (over --matmul-precision) and cuDNN TF32 off.
    if (options.no_tf32) {
      ctx.setFloat32MatmulPrecision("highest");
      ctx.setAllowTF32CuDNN(false);
    } else if (!options.matmul_precision.empty()) {
      ctx.setFloat32MatmulPrecision(options.matmul_precision);
    }
  } catch (const c10::Error& e) {
    throw Error(Error::Kind::Usage, fmt::format("torch refuses --matmul-precision {}{}: {}", options.matmul_precision,
                                                options.no_tf32 ? " with --no-tf32" : "", first_line(e.what())));
  }
}

MathSettingsScope::~MathSettingsScope() {
  if (!changed_) return;
  try {
    at::Context& ctx = at::globalContext();
    ctx.setFloat32MatmulPrecision(precision_);
    ctx.setAllowTF32CuDNN(cudnn_tf32_);
  } catch (const c10::Error&) {
    // Putting back what torch itself held cannot be refused; nothing useful to do in a destructor.
  }
}

}  // namespace pt2diff
