// graphs/collectives.h — the collectives a graph issues (`_c10d_functional.*`), read off its nodes, and the
// graph cut at them: what `pt2diff dist` judges rank by rank (docs/distributed.md). No torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// One call of a functional collective (torch.ops._c10d_functional.*), as the node gives it.
struct CollectiveCall {
  enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Wait };
  NodeId node = -1;
  std::string name;             ///< the node's name ("all_reduce_1")
  Op op = Op::AllReduce;
  std::string target;           ///< "torch.ops._c10d_functional.all_reduce.default"
  ValueId input = kNoValue;     ///< the tensor it sends (wait_tensor: the one it waits for)
  std::string reduce;           ///< "sum", "avg", "max", "min", "product", "premul_sum" (reductions only)
  std::string group;            ///< the group's name ("0" is WORLD); empty for wait_tensor
  int64_t group_size = -1;      ///< as the node says (all_gather, reduce_scatter); -1 when it does not
  int64_t src = -1;             ///< broadcast's source (a global rank)
  std::vector<int64_t> output_split_sizes, input_split_sizes;  ///< all_to_all_single; empty: equal splits
};
const char* collective_op_name(CollectiveCall::Op op);  ///< "all_reduce", "all_gather_into_tensor", ...

/// Whether `target` is a functional collective or its wait ("torch.ops._c10d_functional.*").
bool is_collective_target(std::string_view target);
/// The call `node` makes; nullopt (and `why` set) when it is not a functional collective this reads: an
/// unknown one (all_reduce_coalesced, ...) or arguments of another form.
std::optional<CollectiveCall> collective_call(const Node& node, std::string& why);
/// Every collective (waits included) of the top-level graph, in graph order. Throws pt2diff::Error
/// (Unsupported) naming the node for one collective_call() cannot read.
std::vector<CollectiveCall> collective_calls(const Graph& graph);

/// `graph` with every collective and wait node removed and each value they made that a kept node or an output
/// reads turned into a user input: the rank-local program, whose collectives are fed (pt2diff dist feeds them
/// from the reference). The kept nodes keep their names; the new inputs are named as the values were.
struct CutGraph {
  ExportedGraph graph;
  std::vector<std::string> fed;      ///< the new user inputs (value names), in graph order
  std::vector<std::string> removed;  ///< the collective and wait nodes removed, in graph order
};
CutGraph cut_at_collectives(const ExportedGraph& graph);

}  // namespace pt2diff
