// engine/hints/hint_context.h — what every hint experiment gets: the culprit window, the values it was
// fed, and its results compiled, eager and in fp64.
#pragma once

#include <optional>
#include <vector>

#include "pt2diff/advanced/backend.h"
#include "pt2diff/compare.h"
#include "pt2diff/diff.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

struct HintContext {
  const Program& program;
  const Interpreter& interpreter;
  const DiffOptions& options;
  RegionSpec window;                 ///< fused, judged at its last node's outputs
  std::vector<c10::IValue> inputs;   ///< fp64 values rounded to their dtypes at the window's boundary
  at::Tensor compiled, eager, fp64;  ///< the judged output of the window, three ways
  size_t judged = 0;                 ///< which of window.outputs that is
  std::vector<std::string> random_nodes;  ///< the window's nodes that draw random numbers
  /// The run's compiled side, or nullptr: the compiler levers compile in its process where it can
  /// (Backend::with_compiler_settings), else in a backend of their own.
  Backend* backend = nullptr;
  /// Where the graph writes in place (Interpreter::storage_model); nullptr when nothing does.
  const StorageModel* storage = nullptr;
};

// The experiments themselves are listed, declared and ordered in hint_registry.cpp.

}  // namespace pt2diff
