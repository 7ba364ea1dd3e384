// engine/diff/localize_kernel.cpp — stage localize_kernel: the op inside the kernel table's first failing
// kernel. Its nodes that the failing node depends on are compiled as regions from fp64-exact inputs and
// bisected (engine/localize/kernel_search.cpp) in at most 1 + ceil(log2 |nodes|) compiles; whether the op
// fails alone comes from the exploded compile. Runs when a divergence is localized (the same conditions
// as localize_divergence) and the kernel table named a first failing kernel.
#include <fmt/format.h>
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
  std::map<std::string, NodeId> in_kernel;
  for (const Node& n : g.nodes()) in_kernel[n.name] = n.id;
  std::set<NodeId> kernel_ids;
  for (const std::string& name : k.nodes)
    if (auto it = in_kernel.find(name); it != in_kernel.end()) kernel_ids.insert(it->second);
  auto failing = in_kernel.find(t.first_failing_node);
  if (failing == in_kernel.end()) return;
  // The kernel's nodes the failing one depends on (through the kernel's own nodes), and it.
  std::set<NodeId> needed{failing->second};
  std::vector<NodeId> stack{failing->second};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (ValueId v : g.node(id).input_values())
      if (NodeId p = g.value(v).producer; p != kGraphInput && kernel_ids.count(p) && needed.insert(p).second) stack.push_back(p);
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
