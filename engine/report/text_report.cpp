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

void line(std::string& out, const std::string& s) { out += s + "\n"; }

bool named(const Culprit& c) { return c.kind == Culprit::Kind::SingleOp || c.kind == Culprit::Kind::Window; }

/// Whether the compile of the whole graph failed (the verdict is then COMPILER FAILED).
bool graph_failed(const DiffResult& r) {
  bool failed = false;
  for (const CompileRecord& c : r.compiles) failed = failed || (c.what == "graph" && !c.ok);
  return failed;
}

/// Each compile: its size and times, or why it failed.
void compiles_block(std::string& out, const DiffResult& r) {
  if (r.compiles.empty()) return;
  line(out, "compiles:");
  for (const CompileRecord& c : r.compiles) {
    if (c.ok)
      line(out, fmt::format("  {:<9} {:>5} nodes  compile {:.2f} s  run {:.2f} ms", c.what, c.nodes, c.compile_seconds, c.run_seconds * 1e3));
    else
      line(out, fmt::format("  {:<9} {:>5} nodes  FAILED ({}): {}", c.what, c.nodes, failure_kind_name(c.failure), c.message));
  }
  line(out, "");
}

/// Each graph output's verdict, with its RMSE and max ulp to fp64 on both sides.
void outputs_block(std::string& out, const DiffResult& r) {
  line(out, "outputs (compiled vs eager, fp64 as referee; RMSE to fp64):");
  for (const OutputVerdict& o : r.outputs) {
    if (o.verdict.reason == "no_compiled_value") {
      line(out, fmt::format("  {:<5} {:<20} {:<20} eager {}  (no compiled value)", "FAIL", o.name, o.verdict.reason, num(o.eager_to_fp64.rmse)));
      continue;
    }
    line(out, fmt::format("  {:<5} {:<20} {:<20} compiled {}  eager {}  max ulp compiled {} eager {}   {}", o.verdict.pass ? "PASS" : "FAIL",
                          o.name, o.verdict.reason, num(o.compiled_to_fp64.rmse), num(o.eager_to_fp64.rmse), ulp(o.compiled_to_fp64.max_ulp),
                          ulp(o.eager_to_fp64.max_ulp), o.verdict.detail));
  }
  line(out, "");
}

/// The culprit: its summary, its nodes, its numbers when named, and what the exploded compile flagged.
void culprit_lines(std::string& out, const Localization& l) {
  const Culprit& c = l.culprit;
  line(out, fmt::format("  {}: {}", culprit_kind_name(c.kind), c.summary));
  for (size_t i = 0; i < c.nodes.size(); ++i)
    line(out, fmt::format("    {:<14} {:<32} {}{}", c.nodes[i], c.ops[i], c.sources[i],
                          c.module_paths[i].empty() ? "" : "  [" + c.module_paths[i] + "]"));
  if (named(c))
    line(out, fmt::format("    {}: compiled RMSE to fp64 {}, eager {}; {}", c.value, num(c.compiled_to_fp64.rmse), num(c.eager_to_fp64.rmse),
                          c.verdict.reason));
  if (!l.exploded_suspects.empty())
    line(out, fmt::format("  exploded compile flagged: {} ({})", fmt::join(l.exploded_suspects, ", "),
                          l.exploded_agrees ? "agrees with the bisection" : "the bisection found otherwise"));
}

/// Each hint: its finding, the first notes and its suggestion.
void hint_lines(std::string& out, const Localization& l) {
  for (const Hint& h : l.hints) {
    line(out, fmt::format("  hint ({}, {}): {}", h.kind, h.finding, h.summary));
    const size_t shown = std::min<size_t>(h.notes.size(), 8);  // the JSON report has them all
    for (size_t i = 0; i < shown; ++i) line(out, fmt::format("      {}", h.notes[i]));
    if (h.notes.size() > shown) line(out, fmt::format("      ... {} more in --json", h.notes.size() - shown));
    if (!h.suggestion.empty()) line(out, fmt::format("    -> {}", h.suggestion));
  }
}

/// The repro written (or why not, or how to ask for one), then the probe log.
void repro_and_probe_lines(std::string& out, const Localization& l) {
  if (l.repro && l.repro->ok) line(out, fmt::format("  repro: {}", l.repro->command));
  else if (l.repro) line(out, fmt::format("  repro not written: {}", l.repro->message));
  else if (named(l.culprit))
    line(out, "  (--repro DIR writes this culprit as a standalone archive with its inputs and the command to run)");
  line(out, "  probes:");
  for (const Probe& p : l.probes)
    line(out, fmt::format("    {:<18} {:<44} {:<5} {:<20} {}{:.2f} s", phase_name(p.phase), p.region, p.fails ? "FAIL" : "pass",
                          p.failure ? failure_kind_name(*p.failure) : p.verdict.reason, p.compiled ? "compiled, " : "", p.seconds));
}

void localization_block(std::string& out, const Localization& l) {
  line(out, fmt::format("localization ({} of the failing outputs' cone of {} nodes; {} compiles, budget {}; {:.2f} s):",
                        fmt::join(l.failing_outputs, ", "), l.cone_size, l.compiles, l.budget, l.seconds));
  culprit_lines(out, l);
  hint_lines(out, l);
  repro_and_probe_lines(out, l);
  line(out, "");
}

/// The nodes that introduce the most local error, worst first.
void ranking_block(std::string& out, const DiffResult& r) {
  if (r.ranking.empty()) {
    line(out, "no node introduces error: every local result is exact");
  } else {
    line(out, "nodes introducing the most error (local: the node alone on fp64 inputs rounded to its dtypes; ulp compiled / eager):");
    for (size_t i : r.ranking) {
      const NodeError& n = r.nodes[i];
      line(out, fmt::format("  {:>8} / {:>8} ulp  {:<14} {:<32} {}{}", n.compiled_local_ulp < 0 ? "-" : ulp(n.compiled_local_ulp),
                            ulp(n.local_ulp), n.name, n.target, n.source, n.module_path.empty() ? "" : "  [" + n.module_path + "]"));
    }
  }
  line(out, "");
}

/// One row of the per-node table: a value not compared, compared exactly (mismatch counts), or in ulp and relative error.
std::string value_row(const NodeError& n, const ValueError& v) {
  if (!v.compared) return fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9}", v.name, n.target, v.dtype, v.shape, "not compared");
  if (v.local.exact_kind)
    return fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10}", v.name, n.target, v.dtype, v.shape,
                       v.has_compiled_local ? fmt::format("{} diff", v.compiled_local.mismatches) : "-",
                       fmt::format("{} diff", v.local.mismatches), "", fmt::format("{} diff", v.propagated.mismatches), "");
  return fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10}", v.name, n.target, v.dtype, v.shape,
                     v.has_compiled_local ? ulp(v.compiled_local.max_ulp) : "-", ulp(v.local.max_ulp), num(v.local.max_rel),
                     ulp(v.propagated.max_ulp), num(v.propagated.max_rel), num(v.propagated.rmse));
}

/// Every value of every node, in graph order.
void per_node_block(std::string& out, const DiffResult& r) {
  line(out, "per node, in graph order (local and propagated error against fp64; comp ulp: compiled local error):");
  line(out, fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10}", "value", "op", "dtype", "shape", "comp ulp",
                        "local ulp", "local rel", "prop ulp", "prop rel", "prop rmse"));
  for (const NodeError& n : r.nodes)
    for (const ValueError& v : n.values) line(out, value_row(n, v));
}

/// What the reader must know besides the numbers: fix-ups, warnings, random and incomparable ops.
void notes_block(std::string& out, const DiffResult& r) {
  if (!r.fixups.empty()) {
    line(out, "");
    line(out, fmt::format("fp64 fix-ups applied: {}", fmt::join(r.fixups, "; ")));
  }
  if (!r.autocast.empty()) {
    line(out, fmt::format("autocast regions ({}): eager ran these bodies under autocast, fp64 in float64:", r.autocast.size()));
    for (const AutocastRegion& a : r.autocast) line(out, "  " + autocast_summary(a));
  }
  for (const std::string& w : r.warnings) line(out, "warning: " + w);
  if (!r.random_nodes.empty())
    line(out, fmt::format("random ops (native, fp64 and local runs draw the same stream): {}", fmt::join(r.random_nodes, ", ")));
  if (!r.not_comparable.empty()) line(out, fmt::format("not comparable in fp64 (bitcasts, float8): {}", fmt::join(r.not_comparable, ", ")));
  line(out, "");
}
}  // namespace

std::string to_text(const DiffResult& r) {
  std::string out;
  line(out, fmt::format("{} with {}: compiled = {}, reference = fp64, rule = {}, tol = {}", r.graph, r.inputs, r.compiled,
                        rule_name(r.rule), r.rule.tol));
  if (r.devices.native != "cpu" || r.devices.reference != "cpu")
    line(out, fmt::format("devices: eager on {}, fp64 on {} ({}){}", r.devices.native, r.devices.reference, r.devices.why,
                          r.devices.peak_gpu_bytes >= 0 ? fmt::format("; peak GPU memory {:.1f} MiB", r.devices.peak_gpu_bytes / 1048576.0) : ""));
  line(out, "");
  compiles_block(out, r);
  outputs_block(out, r);
  if (r.localization) localization_block(out, *r.localization);
  ranking_block(out, r);
  per_node_block(out, r);
  notes_block(out, r);
  const bool failed = graph_failed(r);
  const char* verdict = failed ? "COMPILER FAILED" : r.diverged ? "DIVERGED" : "AGREE";
  line(out, fmt::format("{}{} ({} nodes, {:.2f} s)", verdict, r.compiled_failed && !failed ? " (a compile failed: see compiles)" : "",
                        r.nodes.size(), r.seconds));
  return out;
}

}  // namespace pt2diff

namespace pt2diff {

std::string hints_to_text(const std::vector<Hint>& hints) {
  if (hints.empty()) return "no experiment applies (no floating output, or the compiler could not run it)\n";
  std::string out;
  for (const Hint& h : hints) {
    out += fmt::format("\n{} ({}): {}\n", h.kind, h.finding, h.summary);
    if (!h.suggestion.empty()) out += fmt::format("  -> {}\n", h.suggestion);
    for (const std::string& note : h.notes) out += fmt::format("  {}\n", note);
    for (const auto& [name, value] : h.evidence) out += fmt::format("  {:<34} {:.4g}\n", name, value);
  }
  return out;
}

}  // namespace pt2diff
