// graphs/search/first_failing_end.cpp — phase 1: the smallest prefix of the cone whose compiled
// frontier fails. Prefixes are ancestor-closed, so they run from the graph inputs; consecutive
// prefixes share most kernels, which the compiler's cache reuses.
#include "graphs/search/search_state.h"

namespace pt2diff {

namespace {
constexpr Phase kFirstFailingEndPhase = Phase::FirstFailingEnd;
}

size_t first_failing_end(SearchState& state, const std::vector<size_t>& suspects) {
  const size_t m = state.oracle.size();
  if (m == 0) return 0;
  auto fails = [&](size_t end) { return state.prefix(end, kFirstFailingEndPhase).fails; };
  if (state.options.search == LocalizeOptions::Search::Linear) {
    for (size_t end = 1; end <= m; ++end) {
      if (!state.budget_left()) {
        state.out_of_budget = true;
        return 0;
      }
      if (fails(end)) return end;
    }
    return 0;
  }
  // Invariant: prefix(lo) passes (the empty prefix does), prefix(hi) fails (assumed for the whole
  // cone, checked below). The exploded compile's first suspect s is tried first: prefix(s + 1)
  // failing and prefix(s) passing settles phase 1 in two probes.
  size_t lo = 0, hi = m;
  bool hi_checked = false;
  if (state.options.use_exploded && !suspects.empty() && suspects.front() < m) {
    const size_t s = suspects.front();
    if (fails(s + 1)) {
      hi = s + 1;
      hi_checked = true;
      if (s == 0 || !fails(s)) return hi;
      hi = s;
    } else {
      lo = s + 1;
    }
  }
  while (hi - lo > 1) {
    if (!state.budget_left()) {
      state.out_of_budget = true;
      return 0;
    }
    const size_t mid = lo + (hi - lo) / 2;
    if (fails(mid)) {
      hi = mid;
      hi_checked = true;
    } else {
      lo = mid;
    }
  }
  if (!hi_checked && !fails(hi)) return 0;  // the whole cone compiled alone does not diverge
  return hi;
}

}  // namespace pt2diff
