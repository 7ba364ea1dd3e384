// graphs/search/latest_start.cpp — phase 2: the latest start of a window ending at the first
// diverging node that still fails when fed with fp64 values rounded to their dtypes. The single op
// is asked first: it is the common answer and costs one probe.
#include "graphs/search/search_state.h"

namespace pt2diff {

namespace {
constexpr Phase kLatestStartPhase = Phase::LatestStart;
}

size_t latest_start(SearchState& state, size_t end) {
  if (end == 0) return end;
  auto fails = [&](size_t begin) { return state.window(begin, end, kLatestStartPhase).fails; };
  if (fails(end - 1)) return end - 1;
  // Invariant: window(lo) fails (assumed for lo = 0: the prefix failed), window(hi) passes.
  size_t lo = 0, hi = end - 1;
  bool lo_checked = false;
  while (hi - lo > 1) {
    if (!state.budget_left()) {
      state.out_of_budget = true;
      return end;
    }
    const size_t mid = lo + (hi - lo) / 2;
    if (fails(mid)) {
      lo = mid;
      lo_checked = true;
    } else {
      hi = mid;
    }
  }
  if (!lo_checked && !fails(lo)) return end;
  return lo;
}

}  // namespace pt2diff
