// engine/sweep/run_summary.h — one diff run as the sweeps' tables show it (a size of `pt2diff sizes`, a torch of
// `pt2diff recheck`): its level, the worst output and the node verdict's node.
#pragma once

#include <string>

#include "pt2diff/results.h"

namespace pt2diff {

/// `r` summarized into a table's row (a SizePoint, a TorchRow: the same fields by the same names), marked judged:
/// the level (result_level), whether it counts as failing, the largest output error ratio (compiled RMSE to fp64 /
/// eager's) and its output, the node verdict's worst ratio and its first finding's node, else its worst node.
template <typename Row>
void fill_summary(Row& row, const DiffResult& r) {
  row.judged = true;
  row.level = result_level(r);
  row.fails = counts_as_failing(r);
  row.compiled_failed = r.compiled_failed;
  row.worst_ratio = 0;
  row.worst_output.clear();
  for (const OutputVerdict& o : r.outputs)
    if (row.worst_output.empty() || o.verdict.error_ratio > row.worst_ratio) {
      row.worst_ratio = o.verdict.error_ratio;
      row.worst_output = o.name;
    }
  row.node_ratio = r.node_verdict.worst_ratio;
  row.node = r.node_verdict.findings.empty() ? r.node_verdict.worst_node : r.node_verdict.findings.front().node;
}

}  // namespace pt2diff
