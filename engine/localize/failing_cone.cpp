// engine/localize/failing_cone.cpp — step 1: only the ancestors of the failing outputs can matter;
// nothing outside this cone is ever compiled.
#include <algorithm>

#include "engine/localize/compiled_oracle.h"
#include "graphs/dag.h"

namespace pt2diff {

std::vector<NodeId> failing_cone(const Graph& graph, const std::vector<ValueId>& failing, const StorageModel* storage) {
  if (!storage || !storage->any()) {
    Dag dag(graph);
    return dag.ancestor_cone(failing).nodes;
  }
  // Where the graph writes in place, a node also depends on the writes it reads after and the reads its write
  // follows (StorageModel::after); a failing input after the graph starts at the last node writing it.
  std::vector<char> in(graph.nodes().size(), 0);
  std::vector<NodeId> todo;
  auto add = [&](NodeId id) {
    if (id != kGraphInput && !in[static_cast<size_t>(id)]) {
      in[static_cast<size_t>(id)] = 1;
      todo.push_back(id);
    }
  };
  for (ValueId v : failing) {
    const NodeId p = graph.value(v).producer;
    const auto& writers = storage->writers[static_cast<size_t>(storage->root[static_cast<size_t>(v)])];
    add(p);
    for (NodeId w : writers)
      if (p == kGraphInput || w > p) add(w);
  }
  while (!todo.empty()) {
    const NodeId id = todo.back();
    todo.pop_back();
    for (ValueId v : graph.node(id).input_values()) {
      add(graph.value(v).producer);
      // A write after the read: the first later write into a storage this node reads. No data edge leads from it
      // to the failing values, yet a compiler that puts this node's result into that storage (a scatter
      // reinplaced into its input, a copy of the input replaced by the input) has the later write clobber it.
      if (auto w = storage->first_write_after(storage->root[static_cast<size_t>(v)], id)) add(*w);
    }
    for (NodeId before : storage->after[static_cast<size_t>(id)]) add(before);
  }
  std::vector<NodeId> cone;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) cone.push_back(static_cast<NodeId>(i));
  return cone;
}

}  // namespace pt2diff
