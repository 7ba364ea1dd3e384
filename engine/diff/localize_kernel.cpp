// engine/diff/localize_kernel.cpp — stage localize_kernel: the op inside the kernel table's first failing
// kernel. The nodes it computes toward the failing one are compiled as regions from fp64-exact inputs and
// bisected (graphs/search/kernel_search.cpp) in at most 1 + ceil(log2 |nodes|) compiles; whether the op
// fails alone comes from the exploded compile. Runs when a divergence is localized (the same conditions
// as localize_divergence) and the kernel table named a first failing kernel.
#include <map>
#include <set>

#include "engine/diff/stages.h"

namespace pt2diff {

void localize_kernel(RunState& s) {
  KernelTable& t = s.result.kernels;
  DiffResult& r = s.result;
  const Graph& g = s.program.ir.graph;
  const bool suspicious_fails = s.options.localize_suspicious;
  const bool graph_ok = !r.compiles.empty() && r.compiles.front().ok;
  if (t.first_failing < 0 || t.first_failing_node.empty() || !graph_ok || !s.bisect || !s.backend.compiles_regions()) return;
  if (!(r.diverged || (suspicious_fails && r.suspicious))) return;
  const KernelCall& k = t.kernels[static_cast<size_t>(t.first_failing)];
  std::map<std::string, NodeId> by_name;
  for (const Node& n : g.nodes()) by_name[n.name] = n.id;
  std::set<NodeId> kernel_ids, elsewhere;  // the kernel's own nodes; nodes whose value another kernel wrote
  for (const std::string& name : k.nodes)
    if (auto it = by_name.find(name); it != by_name.end()) kernel_ids.insert(it->second);
  for (const KernelCall& other : t.kernels)
    if (&other != &k)
      for (const KernelBuffer& b : other.buffers)
        if (auto it = by_name.find(b.node); it != by_name.end() && !kernel_ids.count(it->second)) elsewhere.insert(it->second);
  auto failing = by_name.find(t.first_failing_node);
  if (failing == by_name.end() || kernel_ids.empty()) return;
  // What the kernel computes toward its failing node: its own nodes, and the nodes between them that no
  // kernel materialized (computed inline: a divide Inductor folds into the softmax it feeds). The walk
  // stops at values other kernels wrote and at the kernel's first node.
  const NodeId first = *kernel_ids.begin();
  std::set<NodeId> needed{failing->second};
  std::vector<NodeId> stack{failing->second};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (ValueId v : g.node(id).input_values()) {
      const NodeId p = g.value(v).producer;
      if (p == kGraphInput || p < first || elsewhere.count(p)) continue;
      if (needed.insert(p).second) stack.push_back(p);
    }
  }
  std::vector<NodeId> nodes(needed.begin(), needed.end());  // NodeIds are in graph order
  bool exploded_ran = false;
  for (const CompileRecord& c : r.compiles) exploded_ran = exploded_ran || (c.what == "exploded" && c.ok);
  std::set<ValueId> uncomparable;
  for (const std::string& name : s.uncomparable_values) uncomparable.insert(g.find(name));
  auto oracle = make_compiled_oracle(s.program, s.backend, s.interpreter, s.reference, nodes, uncomparable, s.options.rule,
                                     suspicious_fails);
  auto alone_fails = [&](size_t i) -> std::optional<bool> {
    if (!exploded_ran) return std::nullopt;
    return r.nodes[static_cast<size_t>(nodes[i])].compiled_local_fails;
  };
  t.inside = search_kernel(*oracle, k.name, alone_fails, [&](const std::string& label) { *s.step = label; });
  s.step->clear();
}

}  // namespace pt2diff
