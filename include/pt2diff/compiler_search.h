// pt2diff/compiler_search.h — when only the whole graph compiled together diverges, the culprit is a decision the
// compiler took, not an op: the search keeps the whole graph and turns Inductor's own decisions off (a pass
// applied, a node lowered, two nodes fused), each question one real compile, and names the decision whose
// removal makes the graph pass, verified by one compile without that decision alone. Plain data, no torch.
//
//   pt2diff::DiffOptions options;
//   options.compiler_search.always = true;                 // --search-compiler
//   pt2diff::DiffResult r = pt2diff::diff(program, inputs, options);
//   if (r.compiler_search && r.compiler_search->decision)
//     std::cout << r.compiler_search->decision->what << "\n";   // "pass reinplace_inplaceable_ops"
//
// The decisions are those PyTorch's CompilerBisector counts (torch/_inductor/compiler_bisector.py: pre-grad,
// joint-graph and post-grad pass applications, lowerings) and the scheduler's fusions, recorded by the worker
// (python/pt2diff_worker/decisions.py). docs/compiler-search.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pt2diff {

struct CompilerSearchOptions {
  /// Search when an output fails and localization names no op because only the whole compile diverges
  /// (--no-search-compiler: never).
  bool enabled = true;
  /// Search whenever an output fails, a named op or window notwithstanding (--search-compiler).
  bool always = false;
  size_t max_compiles = 24;  ///< the search stops past this many compiles (--search-compiler-max-compiles)
};

/// One decision the compiler took while compiling (BackendOptions::decisions records them).
struct CompilerDecision {
  /// "post_grad_passes", "fusions", "lowerings", "joint_graph_passes", "pre_grad_passes"
  std::string subsystem;
  size_t index = 0;                ///< its place among that subsystem's decisions in that compile (0-based)
  std::string what;                ///< "pass reinplace_inplaceable_ops", "fusion of [a, b] with [c]", "lowering of add"
  std::vector<std::string> nodes;  ///< the exported nodes it touched (none for a pass, which acts on the whole graph)
};

/// Which decisions a compile turns off (BackendOptions::decisions): of `subsystem`, every one from index `limit` on
/// (-1: none), those in `skip`, and those whose `what` is in `skip_what` wherever they come (the scheduler asks again,
/// under another index, about a fusion it was refused). An empty subsystem turns none off: the compile only records.
struct DecisionFilter {
  std::string subsystem;
  long limit = -1;
  std::vector<size_t> skip;
  std::vector<std::string> skip_what;
};

/// One question of the search: the whole graph compiled with some decisions off, every output judged.
struct CompilerSearchStep {
  DecisionFilter off;
  bool passes = false;
  std::string detail;     ///< the first failing output and its reason, or the compiler's message
  size_t decisions = 0;   ///< how many decisions of `off.subsystem` that compile took (those turned off included)
  double seconds = 0;
};

/// The search's answer (DiffResult::compiler_search).
struct CompilerSearch {
  /// How it ended, as a stable code (JSON "conclusion", compiler_search_conclusion_name()).
  enum class Conclusion {
    Found,            ///< "found": `decision` named; `verified` says whether turning it off alone makes the graph pass
    NotReproduced,    ///< "not_reproduced": the whole graph compiled for the search passes (the failure is flaky)
    NoSubsystem,      ///< "no_subsystem": with each subsystem's decisions all off the graph still fails
    BudgetExhausted,  ///< "budget_exhausted": max_compiles reached before one decision was isolated
    CompilerLost,     ///< "compiler_lost": the compiler hung or died during the search
    Unavailable,      ///< "unavailable": the compiled side does not record its decisions (not Inductor's worker)
  } conclusion = Conclusion::Unavailable;
  std::string why;                          ///< what started it: "only the whole graph compiled together diverges", ...
  std::optional<CompilerDecision> decision; ///< the culprit decision
  std::vector<std::string> ops, sources, module_paths;  ///< of decision->nodes, as a user knows them
  bool verified = false;     ///< one compile with only `decision` off passes the rule
  std::string verification;  ///< that compile's outcome, one line
  /// A lever a user has today that removes the decision, as a Python line, and whether one compile with it passed.
  std::string workaround;
  bool workaround_verified = false;
  std::vector<CompilerSearchStep> steps;
  size_t compiles = 0;
  double seconds = 0;
  std::string summary;  ///< one sentence
};
const char* compiler_search_conclusion_name(CompilerSearch::Conclusion c);  ///< "found", "not_reproduced", ...

}  // namespace pt2diff
