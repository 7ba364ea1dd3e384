// engine/diff/rank_nodes.cpp — stage rank_nodes: where the compiler adds error, most first. Errors are taken
// at each value's scale (RMSE / RMS(fp64)), never in ULPs: an element near zero has a tiny ULP, so
// cancellation reads as hundreds of thousands of ULPs in a perfectly good result. With an exploded
// compile, nodes sort by how many times farther from fp64 the compiled local result is than the eager
// local one, then by the compiled local error; without one, by the eager local error.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "engine/diff/stages.h"

namespace pt2diff {

void rank_nodes(RunState& s) {
  DiffResult& r = s.result;
  auto key = [](const NodeError& n) {
    const bool compiled = n.compiled_local_relative >= 0;
    return std::make_tuple(compiled ? n.compiled_vs_eager : 0.0, compiled ? n.compiled_local_relative : n.local_relative);
  };
  auto has_error = [](const NodeError& n) { return n.local_relative > 0 || n.compiled_local_relative > 0; };
  std::vector<size_t> order(r.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(r.nodes[a]) > key(r.nodes[b]); });
  for (size_t i : order)
    if (r.ranking.size() < s.options.top && has_error(r.nodes[i])) r.ranking.push_back(i);
}

}  // namespace pt2diff
