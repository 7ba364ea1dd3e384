// pt2diff/workaround.h — the smallest eager set: which nodes must run in eager PyTorch for the whole
// compiled graph to pass the rule, and the lines a user adds to their program to get that today.
// Plain data, no torch.
//
//   pt2diff::DiffOptions options;
//   options.workaround.enabled = true;                     // --workaround
//   pt2diff::DiffResult r = pt2diff::diff(program, inputs, options);
//   if (r.workaround && r.workaround->verified)
//     for (const auto& line : r.workaround->lines) std::cout << line << "\n";
//
// The search (docs/workaround.md) compiles the whole graph with a set of nodes left eager (each one a
// torch.compiler.disable'd call, the graph broken around it) and judges every output with the run's rule.
// It starts from the culprit localization named and bisects over segments of the other nodes in graph
// order, splitting the segments that are needed, so a set of k nodes out of n costs about
// k * log2(n / k) compiles. The lever it prints (torch.compiler.disable on the innermost modules, or on
// the source lines of nodes outside any module) is then verified by one more compile of exactly what it
// leaves eager.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pt2diff {

struct WorkaroundOptions {
  bool enabled = false;        ///< search for the smallest eager set when an output fails (--workaround)
  size_t max_compiles = 24;    ///< stop the search past this many compiles, keeping the smallest passing set seen
};

/// One node of the eager set, as a user knows it.
struct EagerNode {
  std::string node, op, source, module_path, module_type;
};

/// One thing the user changes: a module whose forward they wrap in torch.compiler.disable, or a source
/// line (a node outside any module) they move into a function so wrapped.
struct EagerLever {
  enum class Kind { Module, SourceLine } kind = Kind::Module;
  std::string module_path;  ///< "layers.0.mlp" (Module)
  std::string module_type;  ///< "LlamaMLP" (Module)
  std::string source;       ///< the user frame "model.py:39 in forward: x = torch.relu(x)" (SourceLine)
  size_t nodes = 0;         ///< how many graph nodes this lever leaves eager
};

/// The search's answer (DiffResult::workaround).
struct Workaround {
  /// How it ended, as a stable code (JSON "conclusion", workaround_conclusion_name()).
  enum class Conclusion {
    Found,             ///< "found": a set whose compile passes; `minimal` says whether it is irreducible
    NotNeeded,         ///< "not_needed": the compiled graph already passes
    EagerFails,        ///< "eager_fails": even with every node eager the graph fails (not the compiler's doing)
    BudgetExhausted,   ///< "budget_exhausted": no passing set found within max_compiles
    CompilerLost,      ///< "compiler_lost": the compiler hung or died during the search
    Unavailable,       ///< "unavailable": the backend cannot leave nodes eager (an AOTI package)
  } conclusion = Conclusion::NotNeeded;
  std::vector<EagerNode> nodes;   ///< the eager set, in graph order
  size_t candidates = 0;          ///< nodes the search could leave eager (every node of the graph)
  bool minimal = false;           ///< no node of the set can be compiled again without failing (each was tried)
  size_t compiles = 0;            ///< compiles the search made, the verification included; 0 when an earlier compile of the
                                  ///< same set (the node verdict's confirmation) answered
  double seconds = 0;
  /// What the user changes to get the set (or a superset of it) in their program, and whether one more
  /// compile of exactly what those lines leave eager passed the rule.
  std::vector<EagerLever> levers;
  std::vector<std::string> lines;  ///< the Python lines to add, one per entry (comments start with '#')
  bool verified = false;
  size_t verified_nodes = 0;       ///< nodes the verification compile left eager (>= nodes.size())
  std::string worst_output;        ///< the output that decided the verification (its verdict below)
  std::string verification;        ///< one line: what the verification compile gave
  std::string summary;             ///< one sentence for humans
};
const char* workaround_conclusion_name(Workaround::Conclusion conclusion);  ///< "found", "not_needed", ...

}  // namespace pt2diff
