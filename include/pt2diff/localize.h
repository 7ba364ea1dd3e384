// pt2diff/localize.h — from "an output diverges" to "this op (or this window of ops) does it".
//
//   pt2diff::DiffOptions options;                       // localization is on by default
//   options.localize.max_compiles = 30;
//   pt2diff::DiffResult r = pt2diff::diff(program, inputs, options);
//   if (r.localization) std::cout << r.localization->culprit.summary << "\n";
//
// The method (docs/method.md): the failing outputs' ancestor cone in topological order c1..cm;
// phase 1 finds the smallest prefix c1..ck whose compiled frontier fails (ck is where divergence
// first shows); phase 2 finds the latest start j such that cj..ck, fed with fp64 values rounded to
// their dtypes at its boundary, still fails: j == k names one op, j < k a window of ops that diverge
// only together. The boundary probes are re-run to tell a flaky compiler from a real transition.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/verdict.h"
#include "pt2diff/failure.h"
#include "pt2diff/hints.h"

namespace pt2diff {

struct LocalizeOptions {
  bool enabled = true;           ///< localize when an output diverges (--no-localize turns it off)
  enum class Search { Binary, Linear } search = Search::Binary;  ///< --bisect binary|linear
  size_t max_compiles = 64;      ///< stop (inconclusive, with the range narrowed so far) past this many compiles
  int repeats = 2;               ///< runs of each boundary probe; results that differ mean "flaky"
  bool use_exploded = true;      ///< start phase 1 at the first op the exploded compile flags
};

/// Which part of the search asked a probe.
enum class Phase {
  FirstFailingEnd,  ///< phase 1: the smallest prefix of the cone whose compiled frontier fails
  LatestStart,      ///< phase 2: the latest start of a window that still fails from fp64-exact inputs
  Recheck,          ///< the boundary probes of phase 1 re-run (flakiness)
};
const char* phase_name(Phase phase);  ///< "first failing end", "latest start", "recheck"

/// One question asked of the compiler: does this region diverge?
struct Probe {
  Phase phase = Phase::FirstFailingEnd;
  std::string region;       ///< "c1..c7: 7 nodes, linear .. add_2" (cone positions, 1-based)
  size_t begin = 0, end = 0;  ///< cone positions [begin, end), 0-based
  bool fails = false;
  std::string value;        ///< the value that decided it (the worst failing one, or the worst passing one)
  Verdict verdict;          ///< the rule on that value
  std::optional<FailureKind> failure;  ///< why the probe could not run (failure.h), when the compiler failed
  bool compiled = false;    ///< this probe cost a compile (re-runs and cached regions do not)
  double seconds = 0;
  double backend_seconds = 0;  ///< of `seconds`, the time inside the backend (compile and run)
};

/// What localization concluded.
struct Culprit {
  enum class Kind {
    SingleOp,      ///< one op diverges on its own, from fp64-exact inputs
    Window,        ///< ops that diverge only together (fusion keeping precision, accumulated rounding)
    Flaky,         ///< a boundary probe gave different answers when re-run: no culprit named
    Inconclusive,  ///< the compile budget ran out, or no prefix of the cone diverges when compiled alone
    /// No op diverges compiled alone or in a window; a decision of the compiler on the whole graph does (a pass, a
    /// fusion, a lowering): DiffResult::compiler_search names it, `nodes` are the ones it joined (compiler_search.h)
    CompilerDecision,
  };
  Kind kind = Kind::Inconclusive;
  /// Whether the search named the op or ops that diverge (a single op or a window), rather than none.
  bool named() const { return kind == Kind::SingleOp || kind == Kind::Window; }
  /// How the search ended, as a stable code (culprit_conclusion_name(); JSON "conclusion"): one per way
  /// of not naming a culprit, so tools can tell them apart without reading `summary`.
  enum class Conclusion {
    Named,                 ///< "named": kind is SingleOp or Window
    FlakyBoundary,         ///< "flaky_boundary": a boundary probe answered differently when re-run
    NoPrefixDiverges,      ///< "no_prefix_diverges": only the whole graph compiled together diverges
    BudgetExhausted,       ///< "budget_exhausted": max_compiles reached in phase 1
    BudgetExhaustedLate,   ///< "budget_exhausted_in_phase_2": reached after divergence was first seen
    AccumulatedUpstream,   ///< "accumulated_upstream": no window ending where divergence shows fails on fp64-exact inputs
    CompilerLost,          ///< "compiler_lost": the compiler hung or died during the search
    RandomStream,          ///< "random_stream": divergence first shows at a random op (streams differ)
    CompilerDecision,      ///< "compiler_decision": the compiler search named the decision (kind CompilerDecision)
  } conclusion = Conclusion::NoPrefixDiverges;
  std::vector<std::string> nodes;  ///< the culprit op, or the window's nodes in order
  std::vector<std::string> ops;    ///< their targets ("aten.mm.default")
  std::vector<std::string> sources;       ///< their user source lines
  std::vector<std::string> module_paths;  ///< their module paths
  std::string value;               ///< the value judged at the end of the window
  Verdict verdict;                 ///< the rule on it (window fed with fp64-exact inputs)
  Metrics compiled_to_fp64, eager_to_fp64;
  std::string summary;             ///< one sentence for humans
};
const char* culprit_kind_name(Culprit::Kind kind);  ///< "single_op", "window", "flaky", "inconclusive", "compiler_decision"
const char* culprit_conclusion_name(Culprit::Conclusion conclusion);  ///< "named", "flaky_boundary", ...

/// One file the compiler wrote for the culprit window (Repro::artifacts).
struct ReproArtifact {
  /// "post_grad_graph" (fx_graph_transformed.py), "output_code" (output_code.py), "ir_post_fusion", "aot_graph",
  /// "runnable" (fx_graph_runnable.py): Inductor's debug trace, as TORCH_COMPILE_DEBUG=1 writes it.
  std::string what;
  std::string path;
};

/// The culprit window as a standalone program anyone can run (DiffOptions::repro_dir).
struct Repro {
  bool ok = false;
  std::string archive;   ///< DIR/repro.pt2: the window, exported by torch.export (weights become inputs)
  std::string inputs;    ///< DIR/repro_inputs.pt: its boundary values (fp64 rounded to their dtypes)
  std::string command;   ///< the one line that reproduces the verdict
  std::string message;   ///< why it could not be written, when !ok
  /// DIR/test_repro.py: the window as a PyTorch unit test (plain PyTorch, no pt2diff; `python test_repro.py` or
  /// pytest): fails while the compiler bug is there (docs/upstream.md); empty when not written, `test_message` why.
  std::string test;
  std::string test_message;
  /// DIR/inductor/: the compiler's own files for the window (its post-grad graph, generated code, fused IR) from one
  /// compile with Inductor's debug trace, when the compiled side is Inductor itself; `artifacts_message` why not.
  std::vector<ReproArtifact> artifacts;
  std::string artifacts_message;
};

struct Localization {
  /// How the culprit was found: "bisection" (the search above, from failing outputs) or "node_evidence"
  /// (the outputs pass, the node verdict's first finding is the culprit with no search compile:
  /// DiffResult::node_verdict, whose confirmation compile is the only one counted in `compiles`).
  std::string found_by = "bisection";
  std::vector<std::string> failing_outputs;
  size_t cone_size = 0;            ///< m: nodes that can affect the failing outputs
  size_t budget = 0;               ///< 2 * ceil(log2 m) + 4 compiles
  size_t compiles = 0;             ///< regions compiled
  std::vector<std::string> exploded_suspects;  ///< cone nodes whose exploded (compiled local) result fails the rule
  bool exploded_agrees = false;    ///< the first suspect is the culprit (or inside the window)
  Culprit culprit;
  std::vector<Probe> probes;
  double seconds = 0;
  std::optional<Repro> repro;      ///< when asked for and a culprit was named
  std::vector<Hint> hints;         ///< why the culprit diverges (hints.h), when one was named
  /// How the other evidence (the kernel table's first failing buffer, the node verdict, the compiler search) stands
  /// to the culprit: where it agrees, or where it differs and which evidence decides and why. One line per source;
  /// never a silent disagreement (docs/verdicts.md, "One culprit from all the evidence").
  std::vector<std::string> evidence;
};

}  // namespace pt2diff
