// graphs/search/compiler_search.h — the compiler search (pt2diff/compiler_search.h) over an oracle that compiles the
// whole graph with some of the compiler's decisions off and judges it: which subsystem holds the culprit (all of its
// decisions off, the graph passes), then a bisection over how many of its decisions are kept, then one compile with
// only the culprit off. No torch: the pipeline gives the oracle (engine/diff/search_compiler.cpp), the tests a fake.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pt2diff/compiler_search.h"

namespace pt2diff {

/// One whole-graph compile with `off` turned off: whether every output passes, why not, and every decision it took
/// (all subsystems, in order). Throws OracleLost when the compiler hung or died.
struct DecisionRun {
  bool passes = false;
  std::string detail;
  std::vector<CompilerDecision> decisions;
  double seconds = 0;
};
using DecisionOracle = std::function<DecisionRun(const DecisionFilter& off)>;

/// The subsystems in the order they are tried: post-grad passes (where reinplacing and the pattern rewrites live),
/// fusions, lowerings, joint-graph passes, pre-grad passes.
const std::vector<std::string>& compiler_subsystems();

/// Runs the search; `on_step` gets a label per compile ("compiler search: post_grad_passes 4 of 16 kept").
/// Fills conclusion, decision, verified, verification, steps and compiles (not the engine's fields: ops, sources,
/// workaround, summary).
CompilerSearch search_compiler(const DecisionOracle& ask, size_t max_compiles,
                               const std::function<void(const std::string&)>& on_step = {});

}  // namespace pt2diff
