// engine/execution/math_settings.h — the torch math settings a user's program runs under (float32
// matmul precision, TF32 for cuBLAS and cuDNN), applied to this process while the engine runs, so
// its eager run on a GPU computes what the user's eager computes; the compiled side gets the same
// settings (BackendOptions: the worker applies them in its process).
#pragma once

#include <string>

#include "pt2diff/options.h"

namespace pt2diff {

/// Applies `options.matmul_precision` and `options.no_tf32` to at::globalContext() for its lifetime and
/// puts back what was there before. `no_tf32` means matmul precision highest (no TF32 in cuBLAS, over any
/// `matmul_precision`) and cuDNN TF32 off, as the worker sets them. Settings left empty keep torch's (and the process's) own. Throws
/// pt2diff::Error(Usage) with torch's reason when torch refuses a combination.
class MathSettingsScope {
 public:
  explicit MathSettingsScope(const BackendOptions& options);
  ~MathSettingsScope();
  MathSettingsScope(const MathSettingsScope&) = delete;
  MathSettingsScope& operator=(const MathSettingsScope&) = delete;

 private:
  bool changed_ = false;
  std::string precision_;
  bool cudnn_tf32_ = true;
};

}  // namespace pt2diff
