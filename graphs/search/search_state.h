// graphs/search/search_state.h — what the phases share: the oracle, the probe log, the budget.
#pragma once

#include <functional>
#include <map>
#include <utility>
#include <string>

#include "graphs/search/oracle.h"

namespace pt2diff {

struct SearchState {
  RegionOracle& oracle;
  const LocalizeOptions& options;
  Localization& result;
  std::function<void(const std::string&)> on_step;
  size_t expected_probes = 0;  ///< for "probe k of ~n"
  bool out_of_budget = false;
  std::map<std::pair<size_t, size_t>, ProbeAnswer> windows;  ///< phase 2's answers by [begin, end)

  bool budget_left() const { return oracle.compiles() < options.max_compiles; }
  /// Asks and logs one probe.
  ProbeAnswer prefix(size_t end, Phase phase);
  ProbeAnswer window(size_t begin, size_t end, Phase phase);

 private:
  ProbeAnswer record(ProbeAnswer answer, size_t begin, size_t end, Phase phase);
  void announce(Phase phase);
};

/// Phase 1: the smallest end k with prefix(k) failing, prefix(k - 1) passing. 0 when none fails.
size_t first_failing_end(SearchState& state, const std::vector<size_t>& suspects);
/// Phase 2: the largest begin j < k whose window [j, k) still fails fed with fp64-exact inputs.
/// Returns k when no window fails (not even [0, k)).
size_t latest_start(SearchState& state, size_t end);
/// Re-runs prefix(k) and prefix(k - 1) (options.repeats runs each): false when an answer changes.
bool transition_is_stable(SearchState& state, size_t end);

}  // namespace pt2diff
