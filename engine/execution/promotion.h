// engine/execution/promotion.h — PyTorch's type promotion as a node saw it, and the node recomputed
// under a promotion that picks the lower of its floating input dtypes (a compiler that gets a mixed
// bf16/fp32 op wrong). The fault backend plants the latter; the dtype-promotion hint tests for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/graph.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

struct Promotion {
  std::vector<at::ScalarType> tensor_inputs;  ///< dtypes of the tensor inputs, in argument order
  bool has_scalar = false;                     ///< a Python number took part
  at::ScalarType result_type = at::kFloat;     ///< at::result_type over the tensor and number inputs
  bool mixed = false;                          ///< two different floating dtypes among the tensor inputs
};

/// at::result_type over a call's tensor and number inputs; nullopt when no floating tensor takes part.
std::optional<Promotion> promotion_of(const std::vector<c10::IValue>& inputs);

/// The node recomputed with its floating tensor inputs cast to the lowest-precision floating dtype
/// among them, outputs cast back to the graph's dtypes; nullopt when its inputs are not mixed.
std::optional<std::vector<c10::IValue>> demoted_promotion(NodeCall& call);

}  // namespace pt2diff
