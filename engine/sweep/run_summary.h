// engine/sweep/run_summary.h — one diff run as the sweeps' tables show it (a size of `pt2diff sizes`, a torch of
// `pt2diff recheck`): its level, the worst output and the node verdict's node.
#pragma once

#include <string>

#include "pt2diff/results.h"

namespace pt2diff {

struct RunSummary {
  Level level = Level::Pass;     ///< result_level()
  bool fails = false;            ///< counts_as_failing()
  bool compiled_failed = false;
  double worst_ratio = 0;        ///< the largest output error ratio (compiled RMSE to fp64 / eager's)
  std::string worst_output;      ///< its output
  double node_ratio = 0;         ///< the node verdict's worst ratio
  std::string node;              ///< the node verdict's first finding, else its worst node
};

inline RunSummary summarize_run(const DiffResult& r) {
  RunSummary s;
  s.level = result_level(r);
  s.fails = counts_as_failing(r);
  s.compiled_failed = r.compiled_failed;
  for (const OutputVerdict& o : r.outputs)
    if (s.worst_output.empty() || o.verdict.error_ratio > s.worst_ratio) {
      s.worst_ratio = o.verdict.error_ratio;
      s.worst_output = o.name;
    }
  s.node_ratio = r.node_verdict.worst_ratio;
  s.node = r.node_verdict.findings.empty() ? r.node_verdict.worst_node : r.node_verdict.findings.front().node;
  return s;
}

/// `r`'s summary into a table's row (a SizePoint, a TorchRow: the same fields by the same names), marked judged.
template <typename Row>
void fill_summary(Row& row, const DiffResult& r) {
  const RunSummary run = summarize_run(r);
  row.judged = true;
  row.level = run.level;
  row.fails = run.fails;
  row.compiled_failed = run.compiled_failed;
  row.worst_ratio = run.worst_ratio;
  row.worst_output = run.worst_output;
  row.node_ratio = run.node_ratio;
  row.node = run.node;
}

}  // namespace pt2diff
