// engine/localize/failing_cone.cpp — step 1: only the ancestors of the failing outputs can matter;
// nothing outside this cone is ever compiled.
#include "engine/localize/compiled_oracle.h"
#include "graphs/dag.h"

namespace pt2diff {

std::vector<NodeId> failing_cone(const Graph& graph, const std::vector<ValueId>& failing) {
  Dag dag(graph);
  return dag.ancestor_cone(failing).nodes;
}

}  // namespace pt2diff
