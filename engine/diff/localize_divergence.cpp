// engine/diff/localize_divergence.cpp — stage localize_divergence: when an output diverged (or is suspicious,
// with DiffOptions::localize_suspicious) and the graph
// compiled (a verdict to explain), bisect its failing cone to the first diverging op or window
// (engine/localize/), starting from the exploded compile's suspects.
#include <algorithm>

#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

void localize_divergence(RunState& s) {
  const Graph& g = s.program.ir.graph;
  DiffResult& r = s.result;
  const bool graph_ok = !r.compiles.empty() && r.compiles.front().ok;
  // A compiled run that fails (the compiled program returns a value of another dtype, a view past the end of its
  // storage, a kernel that throws) is localized as a divergence is: the first region whose compiled run fails too is
  // where it starts (a probe the compiler cannot run is a failing probe). A compile that fails, a worker that died
  // or hung are not: each probe would pay for them again.
  const bool run_failed = !r.compiles.empty() && !r.compiles.front().ok && r.compiles.front().failure == FailureKind::RunFailed;
  const bool suspicious_fails = s.options.localize_suspicious;  // a suspicious output is localized like a failing one
  if (!(r.diverged || (suspicious_fails && r.suspicious)) || !(graph_ok || run_failed) || !s.bisect || !s.backend.compiles_regions())
    return;
  std::vector<ValueId> failing;
  std::vector<std::string> failing_names;
  for (const OutputVerdict& o : r.outputs)
    if (counts_as_failing(o.verdict, suspicious_fails)) {
      failing.push_back(g.find(o.value.empty() ? o.name : o.value));
      failing_names.push_back(o.name);
    }
  std::vector<NodeId> cone = failing_cone(g, failing, &s.storage);
  std::vector<size_t> suspects;
  for (size_t i = 0; i < cone.size(); ++i)
    if (r.nodes[static_cast<size_t>(cone[i])].compiled_local_fails) suspects.push_back(i);
  std::set<ValueId> uncomparable;
  for (const std::string& name : s.uncomparable_values) uncomparable.insert(g.find(name));
  auto oracle = make_compiled_oracle(s.program, s.backend, s.interpreter, s.reference, cone, uncomparable, s.options.rule,
                                     suspicious_fails);
  Localization loc = localize(*oracle, s.options.localize, suspects, [&](const std::string& label) { *s.step = label; });
  s.step->clear();
  loc.failing_outputs = failing_names;
  for (size_t i : suspects) loc.exploded_suspects.push_back(g.node(cone[i]).name);
  // A random op where divergence first shows: compiled and eager draw different streams, so no
  // window can be judged; say that rather than blame accumulated error, and try the levers on it.
  s.random_first = loc.culprit.kind == Culprit::Kind::Inconclusive && !loc.culprit.nodes.empty() &&
                   std::find(r.random_nodes.begin(), r.random_nodes.end(), loc.culprit.nodes.front()) != r.random_nodes.end();
  if (s.random_first) {
    loc.culprit.conclusion = Culprit::Conclusion::RandomStream;
    loc.culprit.summary = wording::culprit_summary(loc.culprit, s.options.localize.max_compiles);
    loc.culprit.nodes.resize(1);
  }
  r.localization = std::move(loc);
}

}  // namespace pt2diff
