// engine/diff/name_node_culprit.cpp — stage name_node_culprit: when the outputs pass but the node verdict has a
// finding (judge_nodes), that node is the culprit without a search compile: the exploded compile already
// fed it fp64-exact inputs and saw it stand out. One compile confirms it the cheapest honest way: the whole
// graph with every finding's nodes left eager must bring the outputs' error back to eager's.
#include <algorithm>
#include <chrono>

#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

namespace {

/// The confirmation compile (NodeConfirmation).
NodeConfirmation confirm(RunState& s, const std::vector<std::string>& nodes) {
  const Graph& g = s.program.ir.graph;
  const DiffResult& r = s.result;
  NodeConfirmation c;
  c.eager = nodes;
  for (const OutputVerdict& o : r.outputs)
    if (o.verdict.pass && (c.output.empty() || o.verdict.error_ratio > c.before)) {
      c.output = o.name;
      c.before = o.verdict.error_ratio;
    }
  if (!s.backend.leaves_eager() || !s.backend.compiles_regions() || !s.compiled) {
    c.conclusion = "unavailable";
    c.summary = wording::confirmation_unavailable(s.backend.name());
    return c;
  }
  std::vector<NodeId> ids;
  for (const Node& n : g.nodes())
    if (std::find(nodes.begin(), nodes.end(), n.name) != nodes.end()) ids.push_back(n.id);
  *s.step = "node evidence, confirming";
  const EagerNodesRun run = run_with_eager_nodes(s, ids, false, "confirmation");
  s.step->clear();
  c.compiles = 1;
  c.seconds = run.seconds;
  if (!run.ran) {
    c.conclusion = "compiler_failed";
    c.summary = wording::confirmation_failed(nodes, run.message);
    return c;
  }
  for (const auto& [name, ratio] : run.ratios)
    if (name == c.output) c.after = ratio;
  c.conclusion = c.before <= kNodeConfirmBound                                        ? "invisible_at_outputs"
                 : run.worst_ratio <= kNodeConfirmBound && run.failing_output.empty() ? "confirmed"
                                                                                      : "not_confirmed";
  c.summary = wording::confirmation_summary(c, run.worst_output, run.worst_ratio);
  return c;
}

}  // namespace

void name_node_culprit(RunState& s) {
  DiffResult& r = s.result;
  NodeVerdict& nv = r.node_verdict;
  if (r.localization || r.diverged || nv.findings.empty() || !s.bisect) return;
  const NodeFinding& f = nv.findings.front();
  Localization loc;
  loc.found_by = "node_evidence";
  Culprit& c = loc.culprit;
  c.kind = Culprit::Kind::SingleOp;
  c.conclusion = Culprit::Conclusion::Named;
  c.nodes = {f.node};
  c.ops = {f.op};
  c.sources = {f.source};
  c.module_paths = {f.module_path};
  c.value = f.value;
  c.compiled_to_fp64 = f.compiled_local;
  c.eager_to_fp64 = f.eager_local;
  Verdict& v = c.verdict;
  v.level = f.level;
  v.reason = "node_evidence";
  v.error_ratio = f.ratio;
  v.rmse_result = f.compiled_local.rmse;
  v.rmse_eager = f.eager_local.rmse;
  v.pass = true;
  for (const NodeError& ne : r.nodes)
    if (ne.name == f.node) v.pass = !ne.compiled_local_fails;
  v.detail = wording::node_evidence_detail(f, r.rule);
  std::vector<std::string> all;
  for (const NodeFinding& finding : nv.findings) {
    all.push_back(finding.node);
    all.insert(all.end(), finding.also.begin(), finding.also.end());
  }
  loc.exploded_suspects = all;
  loc.exploded_agrees = true;
  c.summary = wording::node_evidence_culprit(f);
  const auto start = std::chrono::steady_clock::now();
  nv.confirmation = confirm(s, all);
  loc.compiles = nv.confirmation->compiles;
  loc.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.localization = std::move(loc);
}

}  // namespace pt2diff
