// pt2diff/storage_model.h — which values share a storage and which nodes write it: the program order that
// a graph writing in place keeps beyond its data edges, as data. Part of the IR layer: no torch (graphs/storage_model.cpp, in pt2diff_ir); the interpreter,
// which knows each op's schema, says per node what it writes and what each output views.
//
//   StorageModel m = build_storage_model(graph, effects);  // effects[node]: written inputs, aliased outputs
//   m.root[v]                   the value whose storage `v` lives in (itself when it owns one)
//   m.last_write_before(r, n)   the node that last wrote root `r` before node `n` ran
//   m.first_write_after(r, n)   the next node to write root `r` after node `n` (a write after n's read)
//   m.after[n]                  nodes `n` must follow that no data edge says (read after write, write after read)
#pragma once

#include <optional>
#include <vector>

#include "pt2diff/graph.h"
#include "pt2diff/region.h"

namespace pt2diff {

/// What one node does to storage, in its op's schema's terms.
struct NodeEffects {
  std::vector<ValueId> written;    ///< input values it writes in place (`Tensor(a!)` arguments)
  /// By output index (Node::output_values()): the input value whose storage that output shares (a view, or
  /// the return of an in-place op); kNoValue for a fresh tensor.
  std::vector<ValueId> aliases;
};

struct StorageModel {
  std::vector<ValueId> root;                  ///< by ValueId
  std::vector<std::vector<ValueId>> writes;   ///< by NodeId: the roots it writes, each once
  std::vector<std::vector<NodeId>> after;     ///< by NodeId: effect edges (the writer a read sees, the reads a write follows)
  std::vector<std::vector<NodeId>> writers;   ///< by root ValueId: the nodes writing it, in graph order
  /// Graph inputs (user inputs, buffers, parameters) whose storage some node writes, in value order.
  std::vector<ValueId> mutated_inputs;

  bool any() const;  ///< some node writes in place
  /// Whether `v`'s storage is written by some node.
  bool is_written(ValueId v) const { return !writers[static_cast<size_t>(root[static_cast<size_t>(v)])].empty(); }
  /// The last node before `node` (graph order) that writes root `r`; nullopt when none did. `node` may be one past
  /// the last node (the graph's end).
  std::optional<NodeId> last_write_before(ValueId r, NodeId node) const;
  /// The first node after `node` (graph order) that writes root `r`: the write a read at `node` comes before
  /// (a write after read); nullopt when none does.
  std::optional<NodeId> first_write_after(ValueId r, NodeId node) const;
  /// The node whose write `reader` sees in value `v`: the last write into v's storage after `v` was made and before
  /// `reader`; nullopt when `v` is read as it was made (its kept value stands for it).
  std::optional<NodeId> write_seen(const Graph& graph, ValueId v, NodeId reader) const;
};

/// The inputs of `region` whose storage one of its nodes writes in place, in input order: their values after the region
/// are results too (what torch.compile writes back into the caller's tensors).
std::vector<ValueId> written_region_inputs(const StorageModel& m, const RegionSpec& region);

/// The values that `nodes` (a region) pass on (graph outputs, values read by nodes outside it) and
/// that a node of it made from a storage that a later node of it writes: a write after a read. A compiler that
/// puts such a value into the storage it read (a scatter reinplaced into its input) lets the later write clobber
/// it, and only the value itself shows that: a region keeping such a pair judges it besides its last node's.
std::vector<ValueId> read_before_written(const Graph& graph, const StorageModel& m, std::vector<NodeId> nodes);

/// The model of `graph` from each node's effects (by NodeId). Views of views share their first root.
StorageModel build_storage_model(const Graph& graph, const std::vector<NodeEffects>& effects);

}  // namespace pt2diff
