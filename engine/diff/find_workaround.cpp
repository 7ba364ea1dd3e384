// engine/diff/find_workaround.cpp — stage find_workaround (DiffOptions::workaround): the smallest set of
// nodes to leave eager for the whole compiled graph to pass the rule, and what a user writes to get it.
// The oracle compiles the whole graph with RegionSpec::eager (a torch.compiler.disable'd call per node,
// the user's own lever) and judges every output as judge_outputs does; the search is
// graphs/search/eager_set.cpp, started from the culprit; the oracle is graphs/search/whole_graph_oracle.h. The levers are the innermost modules of the
// set's nodes (torch.compiler.disable on their forward) and, for nodes outside any module, their source
// lines; one more compile leaving eager exactly what the levers leave eager verifies them.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>

#include "engine/diff/stages.h"
#include "graphs/search/whole_graph_oracle.h"
#include "graphs/graph_text.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

namespace {

/// Whether `n` runs inside the module at `path` (any frame of its module stack).
bool inside_module(const Node& n, const std::string& path) {
  return std::any_of(n.source.nn_module_stack.begin(), n.source.nn_module_stack.end(),
                     [&](const ModuleFrame& f) { return f.path == path; });
}

/// "torch.nn.modules.linear.Linear" → "Linear".
std::string short_type(const std::string& type) {
  auto dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

/// The levers that leave `set` eager: the innermost module of each node (none nested in another chosen
/// one), else the node's source line. Returns the levers and every node they leave eager, sorted.
std::pair<std::vector<EagerLever>, std::vector<NodeId>> levers_for(const Graph& g, const std::vector<NodeId>& set, bool by_module) {
  std::map<std::string, std::string> modules;  // path -> type
  std::vector<NodeId> loose;                   // nodes outside any module (or every node, !by_module)
  for (NodeId id : set) {
    const Node& n = g.node(id);
    const std::string path = n.source.module_path();
    if (by_module && !path.empty())
      modules.emplace(path, n.source.nn_module_stack.back().type);
    else
      loose.push_back(id);
  }
  for (auto it = modules.begin(); it != modules.end();) {  // a module inside another chosen one is covered by it
    const bool nested = std::any_of(modules.begin(), modules.end(), [&](const auto& other) {
      return other.first != it->first && it->first.rfind(other.first + ".", 0) == 0;
    });
    it = nested ? modules.erase(it) : std::next(it);
  }
  std::vector<EagerLever> levers;
  std::set<NodeId> covered(loose.begin(), loose.end());
  for (const auto& [path, type] : modules) {
    EagerLever l;
    l.kind = EagerLever::Kind::Module;
    l.module_path = path;
    l.module_type = short_type(type);
    for (const Node& n : g.nodes())
      if (inside_module(n, path)) {
        covered.insert(n.id);
        ++l.nodes;
      }
    levers.push_back(std::move(l));
  }
  std::map<std::string, size_t> lines;  // one lever per source line
  for (NodeId id : loose) {
    const Node& n = g.node(id);
    const std::string frame = n.source.user_frame();
    const std::string key = frame.empty() ? "node " + n.name : frame;
    if (auto it = lines.find(key); it != lines.end()) {
      ++levers[it->second].nodes;
      continue;
    }
    EagerLever l;
    l.kind = EagerLever::Kind::SourceLine;
    l.source = frame.empty() ? wording::lever_without_source(n.name, n.target) : frame;
    l.nodes = 1;
    lines[key] = levers.size();
    levers.push_back(std::move(l));
  }
  return {levers, {covered.begin(), covered.end()}};
}

std::vector<std::string> python_lines(const std::vector<EagerLever>& levers) {
  std::vector<std::string> out;
  out.push_back("# model: the module you compile (the one exported); run before torch.compile(model)");
  for (const EagerLever& l : levers) {
    if (l.kind == EagerLever::Kind::Module) {
      out.push_back(fmt::format("# {} ({}): {} graph node{} left eager", l.module_path, l.module_type, l.nodes, l.nodes == 1 ? "" : "s"));
      out.push_back(fmt::format("m = model.get_submodule(\"{}\")", l.module_path));
      out.push_back("m.forward = torch.compiler.disable(m.forward)");
    } else {
      out.push_back(fmt::format("# {}", l.source));
      out.push_back("#   run this line in a function decorated with @torch.compiler.disable, and call that function there");
    }
  }
  return out;
}

/// The set's nodes as the report names them: op, source line, module path and type.
std::vector<EagerNode> eager_nodes(const Graph& g, const std::vector<NodeId>& set) {
  std::vector<EagerNode> out;
  for (NodeId id : set) {
    const Node& n = g.node(id);
    EagerNode e{n.name, short_target(n.target), n.source.origin(), n.source.module_path(), ""};
    if (!n.source.nn_module_stack.empty()) e.module_type = short_type(n.source.nn_module_stack.back().type);
    out.push_back(std::move(e));
  }
  return out;
}

/// Verifies what the user would write, the modules' forwards disabled (if that fails, the lines alone), into `w`:
/// its levers, lines, verification and whether it holds (`verified`). Returns the last answer.
WholeGraphOracle::Answer verify_levers(const Graph& g, WholeGraphOracle& oracle, const std::vector<NodeId>& set, bool from_nodes,
                                       const std::function<bool(const WholeGraphOracle::Answer&)>& verified, Workaround& w) {
  auto [levers, leaves] = levers_for(g, set, true);
  WholeGraphOracle::Answer check = oracle.ask(leaves);
  if (!verified(check) && leaves != set) {
    std::tie(levers, leaves) = levers_for(g, set, false);
    check = oracle.ask(leaves);
  }
  w.levers = std::move(levers);
  w.lines = python_lines(w.levers);
  w.verified = verified(check);
  w.verified_nodes = leaves.size();
  w.worst_output = check.passes ? check.worst_output : check.output;
  w.verification = wording::workaround_verification(
      {check.passes, leaves.size(), g.nodes().size(), check.output, check.detail, check.worst_output, check.worst_ratio}, from_nodes);
  return check;
}

/// Where the search starts, as positions among the candidates (every node, in graph order): the nodes the node
/// verdict names when it is the reason (`from_nodes`), else what the search already named: the culprit, else the
/// first failing kernel's node.
std::vector<size_t> starting_nodes(const Graph& g, const DiffResult& r, bool from_nodes) {
  std::vector<size_t> out;
  auto add = [&](const std::string& name) {
    for (const Node& n : g.nodes())
      if (n.name == name) out.push_back(static_cast<size_t>(n.id));
  };
  if (from_nodes) {
    for (const NodeFinding& f : r.node_verdict.findings) {
      add(f.node);
      for (const std::string& other : f.also) add(other);
    }
  } else if (r.localization && r.localization->culprit.named()) {
    for (const std::string& name : r.localization->culprit.nodes) add(name);
  } else if (!r.kernels.first_failing_node.empty()) {
    add(r.kernels.first_failing_node);
  }
  return out;
}

}  // namespace

void find_workaround(RunState& s) {
  if (!s.options.workaround.enabled) return;
  const auto start = std::chrono::steady_clock::now();
  DiffResult& r = s.result;
  const Graph& g = s.program.ir.graph;
  Workaround w;
  w.candidates = g.nodes().size();
  auto done = [&]() {
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.workaround = std::move(w);
    s.step->clear();
  };
  const bool suspicious_fails = s.options.fail_on_suspicious || s.options.localize_suspicious;
  const bool fails = !s.compiled || r.diverged || (suspicious_fails && r.suspicious);
  // The outputs pass but nodes stand out (judge_nodes): the set is what the node verdict names, and the
  // verification must bring the outputs' error back to eager's, not only pass the rule they already pass.
  const NodeVerdict& nv = r.node_verdict;
  const bool from_nodes = !fails && nv.level != Level::Pass && !nv.findings.empty();
  if (!fails && !from_nodes) {
    w.conclusion = Workaround::Conclusion::NotNeeded;
    w.summary = wording::workaround_not_needed();
    return done();
  }
  if (!s.backend.leaves_eager() || !s.backend.compiles_regions()) {
    w.conclusion = Workaround::Conclusion::Unavailable;
    w.summary = wording::workaround_unavailable(s.backend.name(), "no eager set searched");
    return done();
  }
  std::vector<NodeId> candidates;
  for (const Node& n : g.nodes()) candidates.push_back(n.id);
  const std::vector<size_t> culprit = starting_nodes(g, r, from_nodes);

  WholeGraphOracle oracle([&](const std::vector<NodeId>& eager) { return run_with_eager_nodes(s, eager, suspicious_fails, "workaround"); },
                          candidates);
  auto verified = [&](const WholeGraphOracle::Answer& a) { return a.passes && (!from_nodes || a.worst_ratio <= kNodeConfirmBound); };
  try {
    std::vector<NodeId> set;
    if (from_nodes) {
      for (size_t p : culprit) set.push_back(candidates[p]);
      std::sort(set.begin(), set.end());
      w.conclusion = Workaround::Conclusion::Found;
      w.minimal = false;
    } else {
      EagerSetSearch found = search_eager_set(oracle, culprit, s.options.workaround.max_compiles,
                                              [&](const std::string& label) { *s.step = label; });
      w.conclusion = found.conclusion;
      w.minimal = found.minimal;
      if (found.conclusion != Workaround::Conclusion::Found) {
        w.compiles = oracle.compiles();
        w.summary = found.conclusion == Workaround::Conclusion::EagerFails ? wording::workaround_eager_fails()
                                                                          : wording::workaround_out_of_budget(s.options.workaround.max_compiles);
        return done();
      }
      for (size_t p : found.eager) set.push_back(candidates[p]);
    }
    w.nodes = eager_nodes(g, set);
    *s.step = "workaround, verifying";
    const WholeGraphOracle::Answer check = verify_levers(g, oracle, set, from_nodes, verified, w);
    w.compiles = oracle.compiles();
    w.summary = wording::workaround_found(w, set.size(), g.nodes().size(), from_nodes, check.worst_ratio);
  } catch (const CannotLeaveEager& refused) {
    w.conclusion = Workaround::Conclusion::Unavailable;
    w.compiles = oracle.compiles();
    w.summary = wording::workaround_unavailable(s.backend.name(), refused.what());
  } catch (const OracleLost& lost) {
    w.conclusion = Workaround::Conclusion::CompilerLost;
    w.compiles = oracle.compiles();
    w.summary = wording::workaround_compiler_lost(lost.what());
  }
  done();
}

}  // namespace pt2diff
