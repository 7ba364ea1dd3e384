// graphs/search/whole_graph_oracle.cpp — the workaround search's oracle (whole_graph_oracle.h).
#include "graphs/search/whole_graph_oracle.h"

namespace pt2diff {

bool WholeGraphOracle::passes(const std::vector<size_t>& eager) {
  std::vector<NodeId> ids;
  for (size_t p : eager) ids.push_back(candidates_[p]);
  return ask(ids).passes;
}

WholeGraphOracle::Answer WholeGraphOracle::ask(const std::vector<NodeId>& eager) {
  const EagerNodesRun run = run_(eager);
  if (!run.reused) ++compiles_;
  Answer a;
  if (!run.ran) {
    if (run.failure == FailureKind::WorkerDied || run.failure == FailureKind::TimedOut) throw OracleLost(run.message);
    if (run.failure == FailureKind::Unusable) throw CannotLeaveEager(run.message);
    a.detail = run.message;
    return a;
  }
  a.output = run.failing_output;
  a.detail = run.failing_detail;
  a.passes = run.failing_output.empty();
  a.worst_output = run.worst_output;
  a.worst_ratio = run.worst_ratio;
  return a;
}

}  // namespace pt2diff
