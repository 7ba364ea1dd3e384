// pt2diff/dist.h — a distributed program's compiled graphs judged rank by rank against one fp64 step
// (`pt2diff dist DIR`, docs/distributed.md). This header needs no torch.
//
//   // DIR/rank_R as pt2diff_capture writes it under a process group (python -m pt2diff_capture ranks ...)
//   pt2diff::DistResult r = pt2diff::diff_distributed("captured", {});
//   std::cout << pt2diff::to_text(r);
//   for (const pt2diff::DistCulprit& c : r.culprits) std::cout << c.kind << " rank " << c.rank << ": " << c.summary << "\n";
//
// For each graph every rank captured (matched by id), three runs of every rank:
//   - eager: each rank's graph in its own dtypes, each collective computed from every rank's value in the
//     program's dtype, folded in group-rank order (what gloo computes for 2 ranks);
//   - fp64: the same in float64, so each collective is folded exactly in a fixed rank order;
//   - compiled: N Inductor workers forming a real process group (gloo on the CPU, NCCL on GPUs), each compiling
//     and running its rank's graph, the compiled collectives included.
// Each rank's outputs are judged (compiled vs eager, fp64 as referee); outputs the reference makes equal on every
// rank are checked equal across the compiled ranks; and each rank's program with its collectives cut out and fed
// from the eager reference (the rank-local program) goes through the whole single-graph diff, which judges every
// node and names a rank-local culprit. The culprits say which of: a rank-local op or window, the collectives or a
// communication pass (every rank-local program agrees, the whole does not), a rank that diverged alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/options.h"
#include "pt2diff/results.h"

namespace pt2diff {

struct DistOptions {
  /// The options of each rank's diff (the rank-local programs) and of the compiled ranks (backend, Inductor
  /// config, timeout, rule). `diff.backend.process_group` is set by diff_distributed for each rank.
  DiffOptions diff;
  /// The process-group backend of the compiled ranks: "gloo" (default; CPU), "nccl" (a CUDA device).
  std::string process_backend = "gloo";
  /// How long a compiled collective may wait for the other ranks before it fails.
  double collective_timeout_seconds = 300;
  /// Which graph ids to judge (empty: every graph every rank captured).
  std::vector<int> graphs;
  /// Run each rank's rank-local program through the single-graph diff (node verdicts, localization); off: only the
  /// whole compiled step per rank and the checks across ranks.
  bool rank_local = true;
};

/// One collective of a graph as every rank issued it (they must agree: else the run stops with a desync).
struct DistCollective {
  std::string node;   ///< "all_reduce"
  std::string op;     ///< "all_reduce", "all_gather_into_tensor", ...
  std::string group;  ///< "0" (WORLD)
  std::string reduce; ///< "sum", ... (reductions)
  std::string source; ///< the user's line that issued it (rank 0's graph)
  /// The collective's result on each rank: eager's (folded in the program's dtype) against fp64's, max relative.
  double eager_max_relative = 0;
};

/// One collective's boundary on one rank of the compiled step, judged against the lockstep reference (compiled vs
/// eager, fp64 as referee): what it was given (its input) and what the graph read back (its wait's result). Probed
/// by one more compile of every rank that also returns these values, only when every rank-local program agrees and
/// the compiled step does not.
struct DistBoundary {
  std::string node;   ///< the collective
  int rank = 0;
  Verdict input, output;
  Metrics output_to_fp64;
};

/// One rank's graph.
struct DistRankResult {
  int rank = 0;
  std::string archive;                  ///< DIR/rank_R/graph_00N.pt2
  /// Each output of the whole compiled rank (real collectives) against the lockstep eager, fp64 as referee.
  std::vector<OutputVerdict> outputs;
  bool compiled_failed = false;         ///< the compiled rank's compile or run failed (`compile_message`)
  std::string compile_message;
  double compile_seconds = 0, run_seconds = 0;
  bool diverged = false;                ///< an output fails the rule
  bool suspicious = false;              ///< an output is suspicious (the rule passes, its error is many times eager's)
  /// The rank-local program (collectives cut out and fed from eager's values) through diff(): every node judged,
  /// a culprit named when it diverges. nullopt with DistOptions::rank_local off.
  std::optional<DiffResult> rank_local;
  std::vector<std::string> fed;         ///< the values fed to the rank-local program (the collectives' results)
};

/// An output that the reference makes the same on every rank (a replicated value: an all_reduce's result, a loss),
/// checked across the compiled ranks.
struct DistAcrossRanks {
  std::string output;
  bool equal = true;          ///< the compiled ranks hold bit-identical values
  std::vector<int> differing; ///< the ranks whose value differs from rank 0's
  double max_abs = 0;         ///< the largest difference from rank 0's value
};

struct DistGraphResult {
  int graph = 0;              ///< the capture's id
  std::string kind;           ///< "forward", "backward", "graph" (an inference capture)
  std::string where;          ///< the capture's source line ("tp_step.py:24 in forward")
  std::vector<DistCollective> collectives;
  std::vector<DistRankResult> ranks;
  std::vector<DistAcrossRanks> across;
  /// The collectives' boundaries per rank (collective order, then rank), when they were probed.
  std::vector<DistBoundary> boundaries;
  /// The communication passes the run turned on, each tried off on every rank: "bucket_all_gathers_fx='none': every
  /// rank agrees" (docs/distributed.md).
  std::vector<std::string> passes_tried;
  bool diverged = false;
  bool suspicious = false;  ///< a rank's output or rank-local program is suspicious and none fails
  bool compiled_failed = false;
};

/// Where a rank's divergence comes from (docs/distributed.md, "Culprits").
struct DistCulprit {
  /// "rank_local": an op or window of one rank's own program diverges with its collectives fed from the reference
  /// (`rank_local` localization named it); "collectives": every rank-local program agrees and the whole compiled step
  /// does not: the compiled collectives or a communication pass around them; "collective": the first collective whose
  /// inputs pass and whose result fails on some rank (`collective_kind` says how); "communication_pass": a pass of
  /// Inductor's that the run turned on (bucketing, reordering for overlap) without which every rank agrees, verified
  /// by one compile of every rank without it; "rank_alone": a value the reference
  /// makes equal on every rank differs on this rank only; "inconclusive": a rank diverges and none of these explains it.
  std::string kind;
  int graph = -1;
  int rank = -1;
  std::vector<std::string> nodes, ops, sources, module_paths;  ///< the rank-local culprit's, or the collective's
  /// For kind "collective", stable: "read_before_wait" (the rank's result is its own input, unreduced), "scale" (the
  /// reference times a constant: a double scaling), "precision" (the fold of the inputs rounded to float16 or
  /// bfloat16), "offset" (another rank's chunk where its own belongs), "value" (none of these).
  std::string collective_kind;
  std::string summary;  ///< one line
};

struct DistResult {
  std::string dir;
  int world_size = 0;
  std::string backend;        ///< the captured program's process-group backend ("gloo")
  std::string compiled;       ///< the compiled side ("inductor")
  std::string process_backend;  ///< the compiled ranks' process group ("gloo")
  std::vector<DistGraphResult> graphs;
  /// One per graph where a rank fails or is suspicious (suspicious ones are searched too: an error that an absolute
  /// tolerance hides, as a collective in float16 does under the default rule, is still many times eager's).
  std::vector<DistCulprit> culprits;
  bool diverged = false;
  bool suspicious = false;
  bool compiled_failed = false;
  double seconds = 0;
};

/// Judges the capture in `dir` (rank_0 ... rank_{N-1}, each with its index.json). Throws pt2diff::Error for a
/// folder that is not a capture of every rank (a rank missing, world sizes that disagree, graphs a rank lacks),
/// and for ranks whose graphs issue different collectives (a desync: named by rank, node and collective).
DistResult diff_distributed(const std::string& dir, const DistOptions& options);

/// The readable report: per graph, each rank's verdict and culprit, the checks across ranks, the culprits.
std::string to_text(const DistResult& result);
/// The report as JSON: the same fields; each rank-local diff as the single-graph report (docs/report.schema.json).
std::string to_json(const DistResult& result);

}  // namespace pt2diff
