// graphs/search/flakiness_check.cpp — a transition is named only if it holds when asked again:
// the two boundary probes are re-run (no new compile) and must answer the same every time.
#include "graphs/search/search_state.h"

namespace pt2diff {

bool transition_is_stable(SearchState& state, size_t end) {
  for (int run = 1; run < state.options.repeats; ++run) {
    if (!state.prefix(end, Phase::Recheck).fails) return false;
    if (end > 1 && state.prefix(end - 1, Phase::Recheck).fails) return false;
  }
  return true;
}

}  // namespace pt2diff
