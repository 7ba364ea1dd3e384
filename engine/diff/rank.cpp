// engine/diff/rank.cpp — stage rank_nodes: where error is introduced, most first. The compiled local
// error when there is one (what the compiler adds), else the eager local error.
#include <algorithm>
#include <numeric>

#include "engine/diff/stages.h"

namespace pt2diff {

void rank_nodes(RunState& s) {
  DiffResult& r = s.result;
  auto score = [](const NodeError& n) { return n.compiled_local_ulp >= 0 ? std::max(n.compiled_local_ulp, n.local_ulp) : n.local_ulp; };
  std::vector<size_t> order(r.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(r.nodes[a]) > score(r.nodes[b]); });
  for (size_t i : order)
    if (r.ranking.size() < s.options.top && score(r.nodes[i]) > 0) r.ranking.push_back(i);
}

}  // namespace pt2diff
