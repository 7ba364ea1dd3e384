// engine/report/text_report.cpp — the readable report: outputs first, then where error comes from.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pt2diff/diff.h"

namespace pt2diff {

namespace {
std::string num(double v) {
  if (v == 0) return "0";
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.2e}", v);
}
std::string ulp(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.1f}", v); }
}  // namespace

std::string to_text(const DiffResult& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("{} with {}: compiled = {}, reference = fp64, rule = {}, tol = {}", r.graph, r.inputs, r.compiled,
                   rule_name(r.rule), r.rule.tol));
  line("");
  bool graph_failed = false;
  if (!r.compiles.empty()) {
    line("compiles:");
    for (const CompileRecord& c : r.compiles) {
      graph_failed = graph_failed || (c.what == "graph" && !c.ok);
      if (c.ok)
        line(fmt::format("  {:<9} {:>5} nodes  compile {:.2f} s  run {:.2f} ms", c.what, c.nodes, c.compile_seconds, c.run_seconds * 1e3));
      else
        line(fmt::format("  {:<9} {:>5} nodes  FAILED ({}): {}", c.what, c.nodes, failure_kind_name(c.failure), c.message));
    }
    line("");
  }
  line("outputs (compiled vs eager, fp64 as referee; RMSE to fp64):");
  for (const OutputVerdict& o : r.outputs) {
    if (o.verdict.reason == "no_compiled_value") {
      line(fmt::format("  {:<5} {:<20} {:<20} eager {}  (no compiled value)", "FAIL", o.name, o.verdict.reason, num(o.eager_to_fp64.rmse)));
      continue;
    }
    line(fmt::format("  {:<5} {:<20} {:<20} compiled {}  eager {}  max ulp compiled {} eager {}   {}", o.verdict.pass ? "PASS" : "FAIL",
                     o.name, o.verdict.reason, num(o.compiled_to_fp64.rmse), num(o.eager_to_fp64.rmse), ulp(o.compiled_to_fp64.max_ulp),
                     ulp(o.eager_to_fp64.max_ulp), o.verdict.detail));
  }
  line("");
  if (r.localization) {
    const Localization& l = *r.localization;
    const Culprit& c = l.culprit;
    line(fmt::format("localization ({} of the failing outputs' cone of {} nodes; {} compiles, budget {}; {:.2f} s):",
                     fmt::join(l.failing_outputs, ", "), l.cone_size, l.compiles, l.budget, l.seconds));
    line(fmt::format("  {}: {}", culprit_kind_name(c.kind), c.summary));
    for (size_t i = 0; i < c.nodes.size(); ++i)
      line(fmt::format("    {:<14} {:<32} {}{}", c.nodes[i], c.ops[i], c.sources[i],
                       c.module_paths[i].empty() ? "" : "  [" + c.module_paths[i] + "]"));
    if (c.kind == Culprit::Kind::SingleOp || c.kind == Culprit::Kind::Window)
      line(fmt::format("    {}: compiled RMSE to fp64 {}, eager {}; {}", c.value, num(c.compiled_to_fp64.rmse), num(c.eager_to_fp64.rmse),
                       c.verdict.reason));
    if (!l.exploded_suspects.empty())
      line(fmt::format("  exploded compile flagged: {} ({})", fmt::join(l.exploded_suspects, ", "),
                       l.exploded_agrees ? "agrees with the bisection" : "the bisection found otherwise"));
    for (const Hint& h : l.hints) {
      line(fmt::format("  hint ({}, {}): {}", h.kind, h.finding, h.summary));
      const size_t shown = std::min<size_t>(h.notes.size(), 8);  // the JSON report has them all
      for (size_t i = 0; i < shown; ++i) line(fmt::format("      {}", h.notes[i]));
      if (h.notes.size() > shown) line(fmt::format("      ... {} more in --json", h.notes.size() - shown));
      if (!h.suggestion.empty()) line(fmt::format("    -> {}", h.suggestion));
    }
    if (l.repro && l.repro->ok) line(fmt::format("  repro: {}", l.repro->command));
    else if (l.repro) line(fmt::format("  repro not written: {}", l.repro->message));
    else if (c.kind == Culprit::Kind::SingleOp || c.kind == Culprit::Kind::Window)
      line("  (--repro DIR writes this culprit as a standalone archive with its inputs and the command to run)");
    line("  probes:");
    for (const Probe& p : l.probes)
      line(fmt::format("    {:<18} {:<44} {:<5} {:<20} {}{:.2f} s", phase_name(p.phase), p.region, p.fails ? "FAIL" : "pass",
                       p.failure ? failure_kind_name(*p.failure) : p.verdict.reason, p.compiled ? "compiled, " : "", p.seconds));
    line("");
  }
  if (r.ranking.empty()) {
    line("no node introduces error: every local result is exact");
  } else {
    line("nodes introducing the most error (local: the node alone on fp64 inputs rounded to its dtypes; ulp compiled / eager):");
    for (size_t i : r.ranking) {
      const NodeError& n = r.nodes[i];
      line(fmt::format("  {:>8} / {:>8} ulp  {:<14} {:<32} {}{}", n.compiled_local_ulp < 0 ? "-" : ulp(n.compiled_local_ulp),
                       ulp(n.local_ulp), n.name, n.target, n.source, n.module_path.empty() ? "" : "  [" + n.module_path + "]"));
    }
  }
  line("");
  line("per node, in graph order (local and propagated error against fp64; comp ulp: compiled local error):");
  line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10}", "value", "op", "dtype", "shape", "comp ulp",
                   "local ulp", "local rel", "prop ulp", "prop rel", "prop rmse"));
  for (const NodeError& n : r.nodes)
    for (const ValueError& v : n.values) {
      if (!v.compared) {
        line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9}", v.name, n.target, v.dtype, v.shape, "not compared"));
        continue;
      }
      if (v.local.exact_kind) {
        line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10}", v.name, n.target, v.dtype, v.shape,
                         v.has_compiled_local ? fmt::format("{} diff", v.compiled_local.mismatches) : "-",
                         fmt::format("{} diff", v.local.mismatches), "", fmt::format("{} diff", v.propagated.mismatches), ""));
        continue;
      }
      line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10}", v.name, n.target, v.dtype, v.shape,
                       v.has_compiled_local ? ulp(v.compiled_local.max_ulp) : "-", ulp(v.local.max_ulp), num(v.local.max_rel),
                       ulp(v.propagated.max_ulp), num(v.propagated.max_rel), num(v.propagated.rmse)));
    }
  if (!r.fixups.empty()) {
    line("");
    line(fmt::format("fp64 fix-ups applied: {}", fmt::join(r.fixups, "; ")));
  }
  for (const std::string& w : r.warnings) line("warning: " + w);
  if (!r.random_nodes.empty())
    line(fmt::format("random ops (native, fp64 and local runs draw the same stream): {}", fmt::join(r.random_nodes, ", ")));
  if (!r.not_comparable.empty()) line(fmt::format("not comparable in fp64 (bitcasts, float8): {}", fmt::join(r.not_comparable, ", ")));
  line("");
  const char* verdict = graph_failed ? "COMPILER FAILED" : r.diverged ? "DIVERGED" : "AGREE";
  line(fmt::format("{}{} ({} nodes, {:.2f} s)", verdict, r.compiled_failed && !graph_failed ? " (a compile failed: see compiles)" : "",
                   r.nodes.size(), r.seconds));
  return out;
}

}  // namespace pt2diff
