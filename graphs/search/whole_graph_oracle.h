// graphs/search/whole_graph_oracle.h — the workaround search's oracle: the whole graph compiled with
// some nodes left eager (RegionSpec::eager, the user's torch.compiler.disable), every output judged. The
// compile and the judging are the pipeline's (run_with_eager_nodes, engine/diff/compile_graph.cpp), given
// as a function: the oracle only asks and reads answers, so it builds and is tested without torch.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graphs/search/oracle.h"
#include "pt2diff/failure.h"
#include "pt2diff/graph.h"

namespace pt2diff {

/// One compile and run of the whole graph with some nodes left eager, every output judged with the run's
/// rule: what --workaround's search and the node verdict's confirmation ask.
struct EagerNodesRun {
  bool ran = false;                     ///< the compile and run succeeded
  std::optional<FailureKind> failure;   ///< why not, when !ran
  std::string message;                  ///< the compiler's message, when !ran
  std::string failing_output;           ///< the first output that counts as failing (empty: none)
  std::string failing_detail;           ///< its verdict's reason, or "no compiled value"
  std::string worst_output;             ///< the output farthest from fp64 relative to eager (Verdict::error_ratio)
  double worst_ratio = 0;               ///< its error ratio
  std::vector<std::pair<std::string, double>> ratios;  ///< every judged output's error ratio
  bool reused = false;                  ///< an earlier compile of the same eager set answered (no compile)
  double seconds = 0;
};

/// The backend refused to leave nodes eager (a worker that does not speak RegionSpec::eager).
struct CannotLeaveEager : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The smallest eager set's oracle over `candidates` (node ids; position i is candidates[i]).
class WholeGraphOracle final : public EagerSetOracle {
 public:
  /// Compiles and runs the whole graph with the given node ids (sorted) eager.
  using Run = std::function<EagerNodesRun(const std::vector<NodeId>& eager)>;

  struct Answer {
    bool passes = false;
    std::string output;        ///< the first failing output; empty when all pass
    std::string detail;        ///< its verdict's reason, or the compiler's message
    std::string worst_output;  ///< the output farthest from fp64 relative to eager
    double worst_ratio = 0;    ///< its error ratio (compiled RMSE to fp64 / eager's)
  };

  WholeGraphOracle(Run run, std::vector<NodeId> candidates) : run_(std::move(run)), candidates_(std::move(candidates)) {}

  size_t size() const override { return candidates_.size(); }
  bool passes(const std::vector<size_t>& eager) override;
  /// One compile and run with `eager` (sorted node ids) left eager. Throws OracleLost when the worker died
  /// or hung, CannotLeaveEager when the backend cannot leave nodes eager; another failed compile is an
  /// answer that does not pass, with the compiler's message.
  Answer ask(const std::vector<NodeId>& eager);
  /// The compiles the answers cost (an answer from an earlier compile of the same set costs none).
  size_t compiles() const { return compiles_; }

 private:
  Run run_;
  std::vector<NodeId> candidates_;
  size_t compiles_ = 0;
};

}  // namespace pt2diff
