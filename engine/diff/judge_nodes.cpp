// engine/diff/judge_nodes.cpp — stage judge_nodes: the node verdict. Every node's compiled local error (the
// exploded compile: the op alone through the compiler, fed fp64 values rounded to its input dtypes) against
// eager's local error on the same inputs, floored at the dtype's rounding (error_ratio()) and, for sums,
// at what a serial loop over the same terms makes (compiled_local_ratio()). A node that
// stands out is evidence of a compiler bug whatever the outputs say: residual streams and norms shrink a
// 5% error at one op to nothing at the outputs (docs/verdicts.md, "Node evidence"). No compile: the
// exploded compile already ran.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>

#include "engine/diff/node_ratio.h"
#include "engine/diff/stages.h"

namespace pt2diff {

namespace {

/// Ops whose values are undefined (uninitialized memory): any two runs differ, and nothing is wrong.
bool undefined_values(std::string_view target) {
  return target.starts_with("aten.empty") || target.starts_with("aten.new_empty");
}

}  // namespace

void judge_nodes(RunState& s) {
  DiffResult& r = s.result;
  NodeVerdict& nv = r.node_verdict;
  const ToleranceRule& rule = s.options.rule;
  bool any_compiled = false;
  for (const NodeError& ne : r.nodes)
    for (const ValueError& ve : ne.values) any_compiled = any_compiled || ve.has_compiled_local;
  if (!any_compiled) {
    nv.unavailable = !s.exploded ? "no exploded compile (--no-exploded, or this graph or backend has none)"
                                 : "the exploded compile gave no compiled local value";
    return;
  }
  nv.available = true;
  if (rule.node_ratio <= 0) nv.unavailable = "--node-ratio 0: the node verdict is off";
  // The same op at the same shape stands out at several nodes (one lowering used in every layer): one
  // finding, named by its first node in graph order.
  std::map<std::string, size_t> finding_of;  // op + dtype + shape -> index in nv.findings
  for (size_t k = 0; k < r.nodes.size(); ++k) {  // r.nodes[k] is the graph's k-th node
    const NodeError& ne = r.nodes[k];
    if (undefined_values(ne.target) ||
        std::find(r.random_nodes.begin(), r.random_nodes.end(), ne.name) != r.random_nodes.end())
      continue;  // random ops draw other streams when compiled; their values are not the compiler's error
    const ValueError* worst = nullptr;
    double worst_ratio = -1;
    for (const ValueError& ve : ne.values) {
      if (!ve.compared || !ve.has_compiled_local || ve.local.exact_kind) continue;
      if (!std::isfinite(ve.local.rmse) || ve.local.ref_nan + ve.local.ref_inf > 0) continue;  // eager or fp64 not finite: no scale to judge at
      ++nv.judged;
      const double ratio = compiled_local_ratio(s, s.program.ir.graph.nodes()[k], ve);
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = &ve;
      }
    }
    if (!worst) continue;
    if (worst_ratio > nv.worst_ratio) {
      nv.worst_ratio = worst_ratio;
      nv.worst_node = ne.name;
    }
    if (rule.node_ratio <= 0 || !(worst_ratio >= rule.node_ratio)) continue;
    const Level level = rule.node_fail_ratio > 0 && worst_ratio >= rule.node_fail_ratio ? Level::Fail : Level::Suspicious;
    const std::string key = ne.target + " " + worst->dtype + " " + worst->shape;
    if (auto it = finding_of.find(key); it != finding_of.end()) {
      NodeFinding& f = nv.findings[it->second];
      f.also.push_back(ne.name);
      f.also_ratios.push_back(worst_ratio);
      if (level == Level::Fail) f.level = Level::Fail;
    } else {
      NodeFinding f;
      f.node = ne.name;
      f.op = ne.target;
      f.source = ne.source;
      f.module_path = ne.module_path;
      f.value = worst->name;
      f.dtype = worst->dtype;
      f.shape = worst->shape;
      f.eager_local = worst->local;
      f.compiled_local = worst->compiled_local;
      f.ratio = worst_ratio;
      const double scale = worst->compiled_local.unit_roundoff * worst->compiled_local.ref_rms;
      f.roundoffs = scale > 0 ? worst->compiled_local.rmse / scale : std::numeric_limits<double>::infinity();
      f.level = level;
      for (const KernelCall& k : r.kernels.kernels)
        if (std::find(k.nodes.begin(), k.nodes.end(), ne.name) != k.nodes.end()) f.kernels.push_back(k.name);
      finding_of[key] = nv.findings.size();
      nv.findings.push_back(std::move(f));
    }
    if (level == Level::Fail || nv.level == Level::Pass) nv.level = level;
  }
}

}  // namespace pt2diff
