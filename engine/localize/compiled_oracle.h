// engine/localize/compiled_oracle.h — answers probes with a backend and the verdict rule.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/localize/oracle.h"
#include "pt2diff/compare.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

/// Every value of one run, indexed by ValueId: the eager (native) run, the fp64 run, and the fp64
/// run rounded to each value's native dtype (what a window is fed at its boundary).
struct ReferenceRuns {
  std::vector<c10::IValue> eager, fp64, rounded;
};

/// The ancestors of `failing` (values) in topological order: everything that can change them.
std::vector<NodeId> failing_cone(const Graph& graph, const std::vector<ValueId>& failing);

/// `suspicious_fails`: a suspicious value (Verdict::level) fails a probe, as a failing one does
/// (DiffOptions::localize_suspicious).
std::unique_ptr<RegionOracle> make_compiled_oracle(const Program& program, Backend& backend, const Interpreter& interpreter,
                                                   const ReferenceRuns& refs, std::vector<NodeId> cone,
                                                   std::set<ValueId> uncomparable, const ToleranceRule& rule,
                                                   bool suspicious_fails = false);

}  // namespace pt2diff
