// engine/diff/search_compiler.cpp — stage search_compiler: when only the whole graph compiled together diverges
// (localization names no op: no prefix of the cone, no window fails alone), the culprit is one of the compiler's own
// decisions. The whole graph is compiled again with Inductor's decisions recorded and some turned off
// (BackendOptions::decisions, the worker's decisions.py), every output judged as the verdict was; the search
// (graphs/search/compiler_search.cpp) names the decision, verifies it by one compile without it alone, and a
// lever a user has today is compiled once more to say whether it removes it. docs/compiler-search.md.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/diff/stages.h"
#include "graphs/graph_text.h"
#include "graphs/search/compiler_search.h"
#include "graphs/search/oracle.h"
#include "pt2diff/backend_spec.h"

namespace pt2diff {

namespace {

/// Why the search runs for this result, or "" when it does not.
std::string reason_to_search(const RunState& s) {
  const DiffResult& r = s.result;
  const CompilerSearchOptions& o = s.options.compiler_search;
  if (!o.enabled || !s.compiled || !r.diverged) return "";
  if (o.always) return "asked for (--search-compiler)";
  if (!r.localization) return "";
  const Culprit& c = r.localization->culprit;
  if (c.kind != Culprit::Kind::Inconclusive) return "";
  if (c.conclusion == Culprit::Conclusion::NoPrefixDiverges)
    return "no prefix of the failing outputs' cone diverges compiled on its own: only the whole graph compiled together does";
  if (c.conclusion == Culprit::Conclusion::AccumulatedUpstream)
    return "no window ending where the divergence first shows fails from fp64-exact inputs: the whole graph compiled "
           "together diverges";
  return "";
}

/// The lever a user sets today against `d`, as Inductor config (key=value) and as a Python line; empty config when
/// only a line can be given.
std::pair<std::string, std::string> lever_for(const CompilerDecision& d, const Graph& g) {
  if (d.subsystem == "fusions") return {"max_fusion_size=1", "torch._inductor.config.max_fusion_size = 1  # no fusion at all"};
  if (d.subsystem == "lowerings") {
    std::string op = d.what.substr(d.what.rfind(' ') + 1);
    for (const std::string& name : d.nodes)
      if (ValueId v = g.find(name); v != kNoValue && g.value(v).producer != kGraphInput)
        op = short_target(g.node(g.value(v).producer).target);
    return {"", fmt::format("torch._inductor.lowering.make_fallback({})  # {} on its ATen kernel", op, op)};
  }
  const std::string pass = d.what.rfind("pass ", 0) == 0 ? d.what.substr(5) : d.what;
  return {fmt::format("disabled_passes='{}'", pass), fmt::format("torch._inductor.config.disabled_passes = \"{}\"", pass)};
}

std::string summary_of(const CompilerSearch& c, size_t max_compiles) {
  switch (c.conclusion) {
    case CompilerSearch::Conclusion::Found:
      return fmt::format("{}{} makes the whole graph diverge (Inductor's {} #{}): {}", c.decision->what,
                         c.decision->nodes.empty() ? "" : fmt::format(" ({})", fmt::join(c.decision->nodes, ", ")),
                         c.decision->subsystem, c.decision->index,
                         c.verified ? "verified, the graph compiled without it alone passes the rule" : c.verification);
    case CompilerSearch::Conclusion::NotReproduced:
      return "the whole graph compiled again, its decisions recorded and its caches off, passes: the divergence did not reproduce";
    case CompilerSearch::Conclusion::NoSubsystem:
      return "with each subsystem's decisions all off (passes, fusions, lowerings) the graph still fails: no single subsystem "
             "of the compiler holds it";
    case CompilerSearch::Conclusion::BudgetExhausted:
      return fmt::format("no decision isolated within {} compiles (--search-compiler-max-compiles)", max_compiles);
    case CompilerSearch::Conclusion::CompilerLost:
      return "the compiler hung or died during the search: " + c.verification;
    case CompilerSearch::Conclusion::Unavailable:
      return c.verification;
  }
  return "";
}

/// Localization::evidence: the kernel table, the node verdict and the compiler search against the culprit.
void reconcile_evidence(DiffResult& r) {
  if (!r.localization) return;
  Localization& l = *r.localization;
  const Culprit& c = l.culprit;
  std::vector<std::string>& out = l.evidence;
  auto in_culprit = [&](const std::string& node) { return std::find(c.nodes.begin(), c.nodes.end(), node) != c.nodes.end(); };
  const KernelTable& k = r.kernels;
  if (k.first_failing >= 0 && !k.first_failing_node.empty()) {
    const KernelCall& call = k.kernels[static_cast<size_t>(k.first_failing)];
    const std::string where = fmt::format("the kernel table's first failing buffer is {} in kernel {} ({})", k.first_failing_node,
                                          call.name, fmt::join(call.nodes, ", "));
    const bool kernel_holds_culprit =
        std::any_of(call.nodes.begin(), call.nodes.end(), [&](const std::string& n) { return in_culprit(n); });
    if (c.named() && in_culprit(k.first_failing_node))
      out.push_back(where + ": the same node as the culprit (agrees)");
    else if (c.named() && kernel_holds_culprit)
      out.push_back(where + ": the culprit is fused into that kernel; the buffer is the kernel's result, the culprit the op "
                            "inside it that diverges from fp64-exact inputs (agrees)");
    else if (c.named())
      out.push_back(where + fmt::format(": not the culprit's kernel. The culprit decides: localization compiled it from "
                                        "fp64-exact inputs and it fails there, while a whole-graph buffer also carries the "
                                        "error of every kernel before it"));
    else if (c.kind == Culprit::Kind::CompilerDecision)
      out.push_back(where + fmt::format(": where the whole compile first goes wrong. The compiler search decides the culprit: "
                                        "no op fails compiled alone, and a compile without its decision passes{}",
                                        kernel_holds_culprit ? "; that kernel holds the decision's nodes (agrees)" : ""));
    else
      out.push_back(where + ": where the whole compile first goes wrong, but no region holding that node fails compiled "
                            "alone from fp64-exact inputs, so localization names no op: the kernel table's node is the lead "
                            "(the compiler search, when it ran, says which decision of the compiler makes it)");
  }
  const NodeVerdict& nv = r.node_verdict;
  if (nv.available && nv.level == Level::Pass && (c.named() || c.kind == Culprit::Kind::CompilerDecision))
    out.push_back("the node verdict passes: each node compiled alone matches eager's local error; the culprit shows only "
                  "where nodes are compiled together, which the node verdict does not test (the localization decides)");
  if (r.compiler_search && r.compiler_search->decision && c.named())
    out.push_back(fmt::format("the compiler search names {} as the decision that makes the whole graph diverge{}: the culprit "
                              "is the op or window where it shows, the decision what to turn off",
                              r.compiler_search->decision->what, r.compiler_search->verified ? " (verified)" : ""));
}

}  // namespace

void search_compiler(RunState& s) {
  struct Reconcile {
    DiffResult& r;
    ~Reconcile() { reconcile_evidence(r); }
  } reconcile{s.result};
  const std::string why = reason_to_search(s);
  if (why.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  DiffResult& r = s.result;
  const Graph& g = s.program.ir.graph;
  CompilerSearch out;
  out.why = why;
  auto done = [&]() {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.summary = summary_of(out, s.options.compiler_search.max_compiles);
    r.compiler_search = std::move(out);
    s.step->clear();
  };
  if (!BackendSpec::parse(s.options.compiled).takes_compiler_config()) {
    out.verification = "the compiled side (" + s.backend.name() + ") is not Inductor's worker: it records no decisions";
    return done();
  }
  const bool suspicious_fails = s.options.fail_on_suspicious || s.options.localize_suspicious;
  RegionSpec region = s.whole;
  region.observe = false;
  // One whole-graph compile under `options` (the run's, with decisions or a lever), every output judged.
  auto compile_judged = [&](const BackendOptions& options, std::optional<std::vector<CompilerDecision>>* decisions) {
    EagerNodesRun a;
    std::unique_ptr<Backend> own = s.backend.with_compiler_settings(options);
    if (!own) own = make_backend(s.options.compiled, s.program, options);
    try {
      auto compiled = own->compile(region, s.whole_inputs);
      if (decisions) *decisions = compiled->decisions();
      const std::vector<c10::IValue> outputs = compiled->run(s.whole_inputs);
      a.ran = true;
      judge_whole_outputs(s, outputs, suspicious_fails, a);
    } catch (const BackendFailure& f) {
      if (f.kind() == BackendFailure::Kind::WorkerDied || f.kind() == BackendFailure::Kind::TimedOut) throw OracleLost(f.what());
      a.failure = f.kind();
      a.message = f.what();
    }
    return a;
  };
  bool records = true;
  DecisionOracle ask = [&](const DecisionFilter& off) {
    const auto t0 = std::chrono::steady_clock::now();
    BackendOptions options = s.options.backend;
    options.decisions = off;
    std::optional<std::vector<CompilerDecision>> decisions;
    const EagerNodesRun a = compile_judged(options, &decisions);
    DecisionRun run;
    run.passes = a.ran && a.failing_output.empty();
    run.detail = !a.ran ? fmt::format("the compile failed: {}", a.message)
                 : a.failing_output.empty() ? "every output passes"
                                            : fmt::format("{} fails ({})", a.failing_output, a.failing_detail);
    if (decisions) run.decisions = std::move(*decisions);
    else records = false;
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!records) throw OracleLost("the worker did not record the compiler's decisions (no \"decisions\" in its compile reply: "
                                   "docs/worker-protocol.md)");
    return run;
  };
  out = search_compiler(ask, s.options.compiler_search.max_compiles, [&](const std::string& label) { *s.step = label; });
  out.why = why;
  if (!records) {
    out.conclusion = CompilerSearch::Conclusion::Unavailable;
    return done();
  }
  if (out.conclusion == CompilerSearch::Conclusion::Found && out.decision) {
    for (const std::string& name : out.decision->nodes) {
      const Node* n = nullptr;
      for (const Node& m : g.nodes())
        if (m.name == name) n = &m;
      out.ops.push_back(n ? short_target(n->target) : "");
      out.sources.push_back(n ? n->source.origin() : "");
      out.module_paths.push_back(n ? n->source.module_path() : "");
    }
    // The lever a user has today, compiled once: does it remove the divergence?
    const auto [config, line] = lever_for(*out.decision, g);
    out.workaround = line;
    if (!config.empty()) {
      *s.step = "compiler search: verifying the lever " + config;
      BackendOptions options = s.options.backend;
      options.inductor_config.push_back(config);
      try {
        const EagerNodesRun a = compile_judged(options, nullptr);
        ++out.compiles;
        out.workaround_verified = a.ran && a.failing_output.empty();
        out.workaround += out.workaround_verified ? "  # verified: the graph then passes the rule"
                                                  : fmt::format("  # tried: the graph still fails ({})", a.ran ? a.failing_output : a.message);
      } catch (const OracleLost& lost) {
        out.workaround += fmt::format("  # not verified: {}", lost.what());
      }
    }
    // Localization named nothing: the decision is the culprit (the nodes it joined, when it names any).
    if (r.localization && r.localization->culprit.kind == Culprit::Kind::Inconclusive) {
      Culprit& c = r.localization->culprit;
      c.kind = Culprit::Kind::CompilerDecision;
      c.conclusion = Culprit::Conclusion::CompilerDecision;
      c.nodes = out.decision->nodes;
      c.ops = out.ops;
      c.sources = out.sources;
      c.module_paths = out.module_paths;
      c.summary = fmt::format("{} ({} #{}){}; found by searching the compiler's decisions on the whole graph (localization: {})",
                              out.decision->what, out.decision->subsystem, out.decision->index,
                              out.verified ? ", verified by one compile without it" : " (not verified alone)", why);
    }
  }
  done();
}

}  // namespace pt2diff
