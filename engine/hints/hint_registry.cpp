// engine/hints/hint_registry.cpp — the table of hint experiments (hint_registry.h).
#include "engine/hints/hint_registry.h"

namespace pt2diff {

// One declaration per experiment, defined in its own file.
std::optional<Hint> dtype_promotion_hint(const HintContext& ctx);  // dtype_promotion.cpp
std::optional<Hint> reduction_order_hint(const HintContext& ctx);  // reduction_order.cpp
std::optional<Hint> compiler_lever_hint(const HintContext& ctx);   // compiler_levers.cpp
std::optional<Hint> aliasing_hint(const HintContext& ctx);         // aliasing.cpp

const std::vector<HintExperiment>& hint_experiments() {
  static const std::vector<HintExperiment> table = {
      {"dtype_promotion",
       {"compiled_keeps_higher_precision", "promotion_differs_from_pytorch", "lower_precision_than_promotion",
        "not_explained_by_promotion"},
       dtype_promotion_hint},  // dtype_promotion.cpp
      {"reduction_order", {"below_envelope", "inside_envelope", "outside_envelope"}, reduction_order_hint},  // reduction_order.cpp
      {"aliasing", {"write_after_read", "read_after_write", "write_through_view", "scatter_written_back", "write_back"}, aliasing_hint},  // aliasing.cpp
      {"compiler_lever", {"lever_removes_divergence", "lever_does_not_remove_divergence"}, compiler_lever_hint},  // compiler_levers.cpp
  };
  return table;
}

}  // namespace pt2diff
