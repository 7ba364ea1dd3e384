// engine/hints/hint_registry.h — every hint experiment in one table, in the order they are tried and
// reported. Adding a hint is its own file (a function over a HintContext), one row in
// hint_registry.cpp, and its tests; tests/engine/hints/hints_test.cpp checks the report schema's
// enums against this table.
#pragma once

#include <optional>
#include <vector>

#include "engine/hints/hint_context.h"

namespace pt2diff {

struct HintExperiment {
  const char* kind;                   ///< Hint::kind it reports: "dtype_promotion"
  std::vector<const char*> findings;  ///< every Hint::finding it can give
  std::optional<Hint> (*run)(const HintContext&);
};

const std::vector<HintExperiment>& hint_experiments();

}  // namespace pt2diff
