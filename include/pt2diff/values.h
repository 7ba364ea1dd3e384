// pt2diff/values.h — the tensors behind a DiffResult's numbers, for re-judging them at another
// tolerance (sweeps), plotting them or saving them. Needs torch (ATen's Tensor).
//
//   const pt2diff::DiffResult r = pt2diff::diff(program, inputs, options);   // options.keep_values = true
//   const pt2diff::OutputValues& out = r.values->outputs[0];
//   pt2diff::Verdict v = pt2diff::judge(out.compiled, out.eager, out.fp64, pt2diff::parse_rule("ulp:8"));
//   if (const pt2diff::NodeValues* n = r.values->node("mm_1")) std::cout << n->fp64.sizes() << "\n";
#pragma once

#include <ATen/core/Tensor.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "pt2diff/results.h"

namespace pt2diff {

/// One graph output's values: undefined where a run has none (the compiler failed, fp64 cannot run it).
struct OutputValues {
  at::Tensor compiled, eager, fp64;
};

/// One value a node defines (DiffOptions::keep_values): the eager run's (propagated from the graph
/// inputs), fp64's, the node run alone in its dtypes on fp64 inputs rounded to them (local), and the
/// same through the compiler's exploded compile (compiled_local; undefined when none ran).
struct NodeValues {
  at::Tensor eager, fp64, local, compiled_local;
};

struct DiffValues {
  std::vector<OutputValues> outputs;  ///< one per DiffResult::outputs, in that order
  std::unordered_map<std::string, NodeValues> by_value;  ///< by ValueError::name (keep_values only)

  /// The kept values of a value a node defines, by name; nullptr when none were kept.
  const NodeValues* node(const std::string& value_name) const {
    auto it = by_value.find(value_name);
    return it == by_value.end() ? nullptr : &it->second;
  }
};

}  // namespace pt2diff
