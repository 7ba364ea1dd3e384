// engine/diff/workaround_stage.cpp — stage find_workaround (DiffOptions::workaround): the smallest set of
// nodes to leave eager for the whole compiled graph to pass the rule, and what a user writes to get it.
// The oracle compiles the whole graph with RegionSpec::eager (a torch.compiler.disable'd call per node,
// the user's own lever) and judges every output as judge_outputs does; the search is
// engine/localize/eager_set.cpp, started from the culprit. The levers are the innermost modules of the
// set's nodes (torch.compiler.disable on their forward) and, for nodes outside any module, their source
// lines; one more compile leaving eager exactly what the levers leave eager verifies them.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "engine/diff/stages.h"
#include "engine/localize/oracle.h"
#include "graphs/graph_text.h"

namespace pt2diff {

namespace {

/// The backend refused to leave nodes eager (a worker that does not speak RegionSpec::eager).
struct CannotLeaveEager : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The whole graph compiled with some nodes eager, every output judged.
class WholeGraphOracle final : public EagerSetOracle {
 public:
  struct Answer {
    bool passes = false;
    std::string output;  ///< the first failing output; empty when all pass
    std::string detail;  ///< its verdict's reason, or the compiler's message
  };

  WholeGraphOracle(RunState& s, std::vector<NodeId> candidates) : s_(s), candidates_(std::move(candidates)) {}

  size_t size() const override { return candidates_.size(); }
  bool passes(const std::vector<size_t>& eager) override {
    std::vector<NodeId> ids;
    for (size_t p : eager) ids.push_back(candidates_[p]);
    return ask(ids).passes;
  }

  /// One compile and run of the whole graph with `eager` (sorted ids) left eager.
  Answer ask(const std::vector<NodeId>& eager) {
    ++compiles_;
    RegionSpec region = s_.whole;
    region.observe = false;
    region.eager = eager;
    DiffResult scratch;  // compile_and_run marks a failed compile as the run's failure: here it is an answer
    auto outputs = compile_and_run(s_.backend, region, s_.whole_inputs, "workaround", scratch);
    const CompileRecord& rec = scratch.compiles.back();  // the search's compiles are counted in Workaround::compiles
    Answer a;
    if (!outputs) {
      if (rec.failure == FailureKind::WorkerDied || rec.failure == FailureKind::TimedOut) throw OracleLost(rec.message);
      if (rec.failure == FailureKind::Unusable) throw CannotLeaveEager(rec.message);
      a.detail = rec.message;
      return a;
    }
    const Graph& g = s_.program.ir.graph;
    const bool suspicious_fails = s_.options.fail_on_suspicious || s_.options.localize_suspicious;
    for (size_t i = 0; i < s_.program.ir.output_specs.size(); ++i) {
      const c10::IValue value = compiled_output(s_, i, *outputs);
      auto names = s_.program.ir.output_specs[i].arg.values();
      const std::string name = names.empty() ? fmt::format("output #{}", i) : g.value(names.front()).name;
      if (!s_.runs.native.outputs[i].isTensor()) continue;
      if (!value.isTensor()) {
        a.output = name;
        a.detail = "no compiled value";
        return a;
      }
      std::optional<Verdict> v = judge_output(s_, i, value.toTensor());
      if (v && counts_as_failing(*v, suspicious_fails)) {
        a.output = name;
        a.detail = v->reason;
        return a;
      }
    }
    a.passes = true;
    return a;
  }

  size_t compiles() const { return compiles_; }

 private:
  RunState& s_;
  std::vector<NodeId> candidates_;
  size_t compiles_ = 0;
};

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
    l.source = frame.empty() ? fmt::format("node {} ({}; no source line recorded)", n.name, n.target) : frame;
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

std::string names(const std::vector<EagerNode>& nodes) {
  std::vector<std::string> out;
  for (const EagerNode& n : nodes) out.push_back(n.node);
  if (out.size() > 6) {
    out.resize(6);
    out.push_back("...");
  }
  return fmt::format("{}", fmt::join(out, ", "));
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
  if (!fails) {
    w.conclusion = Workaround::Conclusion::NotNeeded;
    w.summary = "the compiled graph passes the rule: nothing needs to run eagerly";
    return done();
  }
  if (!s.backend.leaves_eager() || !s.backend.compiles_regions()) {
    w.conclusion = Workaround::Conclusion::Unavailable;
    w.summary = fmt::format("the {} backend cannot leave nodes eager: no eager set searched", s.backend.name());
    return done();
  }
  std::vector<NodeId> candidates;
  for (const Node& n : g.nodes()) candidates.push_back(n.id);
  // Start from what the search already named: the culprit, else the first failing kernel's node.
  std::vector<size_t> culprit;
  auto add = [&](const std::string& name) {
    for (const Node& n : g.nodes())
      if (n.name == name) culprit.push_back(static_cast<size_t>(n.id));
  };
  if (r.localization && (r.localization->culprit.kind == Culprit::Kind::SingleOp || r.localization->culprit.kind == Culprit::Kind::Window))
    for (const std::string& name : r.localization->culprit.nodes) add(name);
  else if (!r.kernels.first_failing_node.empty())
    add(r.kernels.first_failing_node);

  WholeGraphOracle oracle(s, candidates);
  try {
    EagerSetSearch found = search_eager_set(oracle, culprit, s.options.workaround.max_compiles,
                                            [&](const std::string& label) { *s.step = label; });
    w.conclusion = found.conclusion;
    w.minimal = found.minimal;
    if (found.conclusion != Workaround::Conclusion::Found) {
      w.compiles = oracle.compiles();
      w.summary = found.conclusion == Workaround::Conclusion::EagerFails
                      ? "even with every node eager the graph fails the rule: the divergence is not the compiler's"
                      : fmt::format("no passing eager set within {} compiles (--workaround-max-compiles)", s.options.workaround.max_compiles);
      return done();
    }
    std::vector<NodeId> set;
    for (size_t p : found.eager) set.push_back(candidates[p]);
    for (NodeId id : set) {
      const Node& n = g.node(id);
      EagerNode e{n.name, short_target(n.target), n.source.user_frame(), n.source.module_path(), ""};
      if (!n.source.nn_module_stack.empty()) e.module_type = short_type(n.source.nn_module_stack.back().type);
      w.nodes.push_back(std::move(e));
    }
    // Verify what the user would write: the modules' forwards disabled; if that fails, the lines alone.
    *s.step = "workaround, verifying";
    auto [levers, leaves] = levers_for(g, set, true);
    WholeGraphOracle::Answer check = oracle.ask(leaves);
    if (!check.passes && leaves != set) {
      std::tie(levers, leaves) = levers_for(g, set, false);
      check = oracle.ask(leaves);
    }
    w.levers = std::move(levers);
    w.lines = python_lines(w.levers);
    w.verified = check.passes;
    w.verified_nodes = leaves.size();
    w.worst_output = check.output;
    w.verification = check.passes ? fmt::format("passes the rule with {} of {} nodes eager", leaves.size(), g.nodes().size())
                                  : fmt::format("fails at {}: {}", check.output.empty() ? "the compile" : check.output, check.detail);
    w.compiles = oracle.compiles();
    w.summary = fmt::format("leave {} of {} node{} eager ({}){}: {} ({} compile{}{})", set.size(), g.nodes().size(),
                            g.nodes().size() == 1 ? "" : "s", names(w.nodes), w.minimal ? "" : ", not shown minimal",
                            check.passes ? "verified, the compiled graph then passes the rule" : "NOT verified: " + w.verification,
                            w.compiles, w.compiles == 1 ? "" : "s", w.minimal ? "" : ", the budget ran out");
  } catch (const CannotLeaveEager& refused) {
    w.conclusion = Workaround::Conclusion::Unavailable;
    w.compiles = oracle.compiles();
    w.summary = fmt::format("the {} backend cannot leave nodes eager: {}", s.backend.name(), refused.what());
  } catch (const OracleLost& lost) {
    w.conclusion = Workaround::Conclusion::CompilerLost;
    w.compiles = oracle.compiles();
    w.summary = fmt::format("the compiler was lost during the search: {}", lost.what());
  }
  done();
}

}  // namespace pt2diff
