// engine/dist/lockstep.h — every rank's graph run by the interpreter in lockstep, one thread per rank, each
// collective computed from all of its group's values when the last of them arrives (the bulk-synchronous
// executor of docs/distributed.md). No rank waits on a rank that finished or failed: that is a desync, named.
#pragma once

#include <ATen/core/Tensor.h>
#include <map>
#include <string>
#include <vector>

#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

/// The process groups by name ("0" is WORLD): each one's global ranks in group order.
using GroupRanks = std::map<std::string, std::vector<int>>;

/// One rank's run.
struct RankRun {
  RunResult result;
  /// The values the collectives made (each collective's and wait's outputs), by value name: what the rank-local
  /// program is fed.
  std::map<std::string, at::Tensor> collective_values;
  /// Each collective's input as this rank sent it, by the collective's node name.
  std::map<std::string, at::Tensor> collective_inputs;
};

/// Runs rank r's `programs[r]` on `inputs[r]` for every r at `precision`, collectives simulated: all_reduce folds
/// left in group-rank order (`avg` divides the sum by the group size), all_gather concatenates along dim 0 in group
/// order, reduce_scatter folds then keeps the rank's chunk of dim 0, all_to_all_single exchanges split chunks,
/// broadcast copies the source's value. Throws pt2diff::Error naming the rank, node and collective when the ranks
/// desync (another collective, group or size at the same place, or a rank that ends without it) or when a rank's run
/// fails (that rank's error first).
std::vector<RankRun> run_ranks_in_lockstep(const std::vector<const Program*>& programs,
                                           const std::vector<const BoundInputs*>& inputs, Precision precision,
                                           const GroupRanks& groups);

}  // namespace pt2diff
