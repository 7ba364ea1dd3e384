// engine/report/text_report.cpp — the readable report: outputs first, then where error comes from.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graphs/wording/wording.h"
#include "pt2diff/diff.h"

namespace pt2diff {

namespace {
std::string num_text(double v) {
  if (v == 0) return "0";
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.2e}", v);
}
std::string ulp_text(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.1f}", v); }

void line(std::string& out, const std::string& s) { out += s + "\n"; }

bool named(const Culprit& c) { return c.named(); }

/// "[2, 64]", "[2, inf]": a dim's range.
std::string range_text(const DynamicDim& d) {
  return fmt::format("[{}, {}]", d.min ? std::to_string(*d.min) : "-inf", d.max ? std::to_string(*d.max) : "inf");
}

}  // namespace

std::string shapes_line(const ShapeCompile& s) {
  std::vector<std::string> parts;
  if (s.mode == "dynamic") {
    for (const DynamicDim& d : s.symbols) parts.push_back(fmt::format("{} in {}", d.input, range_text(d)));
    std::string text = fmt::format("dynamic: {}", parts.empty() ? "(no symbol kept)" : fmt::format("{}", fmt::join(parts, ", ")));
    text += s.guards.empty() ? "; no other guard" : fmt::format("; guards: {}", fmt::join(s.guards, ", "));
    if (s.recompiles) text += fmt::format("; {} recompile{} (a guard failed at the sizes run)", s.recompiles, s.recompiles == 1 ? "" : "s");
    if (!s.note.empty()) text += "; " + s.note;
    return text;
  }
  for (const DynamicDim& d : s.dims)
    parts.push_back(d.dim >= 0 ? fmt::format("{}.size({}) ({})", d.input, d.dim, d.symbol) : fmt::format("{} ({})", d.input, d.symbol));
  return fmt::format("static: {}; the archive's dynamic dims {}", s.why_static, fmt::join(parts, ", "));
}

namespace {

/// Each compile: its size and times, or why it failed.
void compiles_block(std::string& out, const DiffResult& r) {
  if (r.compiles.empty()) return;
  line(out, "compiles:");
  for (const CompileRecord& c : r.compiles) {
    if (c.ok)
      line(out, fmt::format("  {:<12} {:>5} nodes  compile {:.2f} s  run {:.2f} ms{}", c.what, c.nodes, c.compile_seconds, c.run_seconds * 1e3,
                            c.worker_start_seconds >= 0.005 ? fmt::format("  (its worker started in {:.2f} s)", c.worker_start_seconds) : ""));
    else
      line(out, fmt::format("  {:<12} {:>5} nodes  FAILED ({}): {}", c.what, c.nodes, failure_kind_name(c.failure), c.message));
    if (c.shapes && !c.shapes->dims.empty()) line(out, "  " + std::string(13, ' ') + shapes_line(*c.shapes));
  }
  line(out, "");
}

/// "PASS", "SUSPICIOUS", "FAIL".
std::string level_label(Level level) {
  std::string label = level_name(level);
  for (char& c : label) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return label;
}

using wording::ratio;

/// The lines under an output (or a culprit) for its level and its blind spot.
void level_notes(std::string& out, const Verdict& v, const ToleranceRule& rule, const char* indent) {
  if (v.level == Level::Suspicious) line(out, indent + std::string("suspicious: ") + wording::suspicious(v, rule).text());
  if (!v.blind_spot.empty()) line(out, indent + std::string("vacuous ") + wording::vacuous(v, rule).text());
}

/// Each graph output's level, with its RMSE and max ulp to fp64 on both sides and their ratio.
void outputs_block(std::string& out, const DiffResult& r) {
  line(out, "outputs (compiled vs eager, fp64 as referee; RMSE to fp64 and their ratio, compiled / eager):");
  size_t width = 20;  // wider for a written input's name ("input 'x' after the graph")
  for (const OutputVerdict& o : r.outputs) width = std::max(width, o.name.size());
  for (const OutputVerdict& o : r.outputs) {
    if (o.verdict.reason == "no_compiled_value") {
      line(out, fmt::format("  {:<10} {:<{}} {:<20} eager {}  (no compiled value)", "FAIL", o.name, width, o.verdict.reason,
                            num_text(o.eager_to_fp64.rmse)));
      continue;
    }
    line(out, fmt::format("  {:<10} {:<{}} {:<20} compiled {}  eager {}  ratio {}  max ulp compiled {} eager {}   {}",
                          level_label(o.verdict.level), o.name, width, o.verdict.reason, num_text(o.compiled_to_fp64.rmse), num_text(o.eager_to_fp64.rmse),
                          ratio(o.verdict.error_ratio), ulp_text(o.compiled_to_fp64.max_ulp), ulp_text(o.eager_to_fp64.max_ulp), o.verdict.detail));
    level_notes(out, o.verdict, r.rule, "             ");
  }
  line(out, "");
}

/// The node verdict: every node's compiled local error against eager's (judge_nodes), its findings and
/// their confirmation; one line when nothing stands out.
void node_verdict_block(std::string& out, const DiffResult& r) {
  const NodeVerdict& nv = r.node_verdict;
  if (!nv.available) return;
  if (r.rule.node_ratio <= 0) {
    line(out, fmt::format("node verdict: off (--node-ratio 0); worst node {} at {} eager's local error", nv.worst_node, ratio(nv.worst_ratio)));
    line(out, "");
    return;
  }
  const std::string thresholds = fmt::format("--node-ratio {:g}{}", r.rule.node_ratio,
                                             r.rule.node_fail_ratio > 0 ? fmt::format(", --node-fail-ratio {:g}", r.rule.node_fail_ratio) : "");
  if (nv.findings.empty()) {
    line(out, fmt::format("node verdict: pass ({} values judged, compiled local error against eager's on the same fp64-exact inputs; "
                          "worst {} at {}; {})", nv.judged, nv.worst_node, ratio(nv.worst_ratio), thresholds));
    line(out, "");
    return;
  }
  line(out, fmt::format("node verdict: {} ({} values judged; each op alone through the compiler, fed fp64 values rounded to its dtypes, "
                        "against eager on the same inputs; {}):", level_name(nv.level), nv.judged, thresholds));
  for (const NodeFinding& f : nv.findings) {
    line(out, fmt::format("  {:<10} {:<14} {:<28} compiled local {} ({} roundoffs of {})  eager local {}  ratio {}", level_label(f.level),
                          f.node, f.op, num_text(f.compiled_local.rmse), num_text(f.roundoffs), f.dtype, num_text(f.eager_local.rmse), ratio(f.ratio)));
    line(out, fmt::format("             {}{}", f.source.empty() ? "no source line" : f.source, f.module_path.empty() ? "" : "  [" + f.module_path + "]"));
    if (!f.kernels.empty()) line(out, fmt::format("             compiled in: {}", fmt::join(f.kernels, ", ")));
    if (!f.also.empty()) {
      std::vector<std::string> others;
      for (size_t i = 0; i < f.also.size(); ++i) others.push_back(fmt::format("{} ({})", f.also[i], ratio(f.also_ratios[i])));
      line(out, fmt::format("             the same op and shape ({} {}) stand out at: {}", f.dtype, f.shape, fmt::join(others, ", ")));
    }
  }
  if (nv.confirmation) line(out, "  " + wording::confirmation(*nv.confirmation).text());
  line(out, "");
}

/// The culprit: its summary, its nodes, its numbers when named, and what the exploded compile flagged.
void culprit_lines(std::string& out, const Localization& l) {
  const Culprit& c = l.culprit;
  line(out, fmt::format("  {}: {}", culprit_kind_name(c.kind), c.summary));
  for (size_t i = 0; i < c.nodes.size(); ++i)
    line(out, fmt::format("    {:<14} {:<32} {}{}", c.nodes[i], c.ops[i], c.sources[i],
                          c.module_paths[i].empty() ? "" : "  [" + c.module_paths[i] + "]"));
  if (named(c) && !c.value.empty())  // a culprit whose compiled run failed has no value judged: its summary says why
    line(out, fmt::format("    {}: compiled RMSE to fp64 {}, eager {} (ratio {}); {}, {}", c.value, num_text(c.compiled_to_fp64.rmse),
                          num_text(c.eager_to_fp64.rmse), ratio(c.verdict.error_ratio), level_name(c.verdict.level), c.verdict.reason));
  if (!l.exploded_suspects.empty() && l.found_by == "bisection")
    line(out, fmt::format("  exploded compile flagged: {} ({})", fmt::join(l.exploded_suspects, ", "),
                          l.exploded_agrees ? "agrees with the bisection" : "the bisection found otherwise"));
  for (const std::string& e : l.evidence) line(out, "  evidence: " + e);
}

/// Each hint: its finding, the first notes and its suggestion.
void hint_lines(std::string& out, const Localization& l) {
  for (const Hint& h : l.hints) {
    line(out, "  hint " + wording::hint_line(h));
    const size_t shown = std::min<size_t>(h.notes.size(), 8);  // the JSON report has them all
    for (size_t i = 0; i < shown; ++i) line(out, fmt::format("      {}", h.notes[i]));
    if (h.notes.size() > shown) line(out, fmt::format("      ... {} more in --json", h.notes.size() - shown));
    if (!h.suggestion.empty()) line(out, fmt::format("    -> {}", h.suggestion));
  }
}

/// The repro written and its unit test, or why not.
void repro_lines(std::string& out, const Localization& l) {
  if (l.repro && l.repro->ok) {
    line(out, fmt::format("  repro: {}", l.repro->command));
    line(out, l.repro->test.empty() ? fmt::format("  no unit test written: {}", l.repro->test_message)
                                    : fmt::format("  as a PyTorch unit test (fails while the bug is there): python {}", l.repro->test));
    if (!l.repro->artifacts.empty()) {
      namespace fs = std::filesystem;
      std::string names;
      for (const ReproArtifact& a : l.repro->artifacts) names += (names.empty() ? "" : ", ") + fs::path(a.path).filename().string();
      line(out, fmt::format("  the compiler's own files for the window (Inductor's debug trace): {}/ ({})",
                            fs::path(l.repro->artifacts.front().path).parent_path().string(), names));
    } else if (!l.repro->artifacts_message.empty()) {
      line(out, fmt::format("  no compiler artifacts: {}", l.repro->artifacts_message));
    }
  } else if (l.repro) {
    line(out, fmt::format("  repro not written: {}", l.repro->message));
  }
}

/// The repro written (or why not, or how to ask for one), then the probe log.
void repro_and_probe_lines(std::string& out, const Localization& l) {
  repro_lines(out, l);
  if (!l.repro && named(l.culprit))
    line(out, "  (--repro DIR writes this culprit as a standalone archive with its inputs and the command to run)");
  line(out, "  probes:");
  for (const Probe& p : l.probes)
    line(out, fmt::format("    {:<18} {:<44} {:<10} {:<20} {}{:.2f} s", phase_name(p.phase), p.region,
                          p.fails ? level_label(p.verdict.level) : level_name(p.verdict.level),
                          p.failure ? failure_kind_name(*p.failure) : p.verdict.reason, p.compiled ? "compiled, " : "", p.seconds));
}

void localization_block(std::string& out, const Localization& l) {
  if (l.found_by == "node_evidence") {
    line(out, fmt::format("localization (from the node verdict: the outputs pass; no search compile, {} to confirm; {:.2f} s):", l.compiles,
                          l.seconds));
    culprit_lines(out, l);
    hint_lines(out, l);
    repro_lines(out, l);
    line(out, "");
    return;
  }
  line(out, fmt::format("localization ({} of the failing outputs' cone of {} nodes; {} compiles, budget {}; {:.2f} s):",
                        fmt::join(l.failing_outputs, ", "), l.cone_size, l.compiles, l.budget, l.seconds));
  culprit_lines(out, l);
  hint_lines(out, l);
  repro_and_probe_lines(out, l);
  line(out, "");
}

/// The smallest eager set: what to leave eager, the lines that do it, whether one more compile passed.
void workaround_block(std::string& out, const Workaround& w) {
  line(out, fmt::format("workaround (the smallest eager set, {:.2f} s): {}", w.seconds, w.summary));
  for (const EagerNode& n : w.nodes)
    line(out, fmt::format("  eager: {:<14} {:<32} {}{}", n.node, n.op, n.source, n.module_path.empty() ? "" : "  [" + n.module_path + "]"));
  if (!w.lines.empty()) {
    line(out, fmt::format("  {} ({}):", w.verified ? "add to your program" : "tried, and it did NOT pass", w.verification));
    for (const std::string& l : w.lines) line(out, "    " + l);
  }
  line(out, "");
}

/// The compiler search: the decision that makes the whole graph diverge, each compile that found it, the lever.
void compiler_search_block(std::string& out, const CompilerSearch& c) {
  line(out, fmt::format("compiler search ({} compiles, {:.2f} s; {}):", c.compiles, c.seconds, c.why));
  line(out, fmt::format("  {}: {}", compiler_search_conclusion_name(c.conclusion), c.summary));
  if (c.decision)
    for (size_t i = 0; i < c.decision->nodes.size(); ++i)
      line(out, fmt::format("    {:<14} {:<32} {}{}", c.decision->nodes[i], i < c.ops.size() ? c.ops[i] : "",
                            i < c.sources.size() ? c.sources[i] : "",
                            i < c.module_paths.size() && !c.module_paths[i].empty() ? "  [" + c.module_paths[i] + "]" : ""));
  if (!c.workaround.empty()) line(out, "  in your program: " + c.workaround);
  line(out, "  compiles:");
  for (const CompilerSearchStep& st : c.steps) {
    std::string off = st.off.subsystem.empty() ? "none off (decisions recorded)"
                      : !st.off.skip.empty()   ? fmt::format("{} #{} alone off", st.off.subsystem, fmt::join(st.off.skip, ", #"))
                      : st.off.limit == 0      ? fmt::format("{}: all {} off", st.off.subsystem, st.decisions)
                                               : fmt::format("{}: first {} of {} kept", st.off.subsystem, st.off.limit, st.decisions);
    line(out, fmt::format("    {:<48} {:<6} {:.2f} s  {}", off, st.passes ? "pass" : "FAIL", st.seconds, st.detail));
  }
  line(out, "");
}

/// The nodes where the compiler adds the most error, at each value's scale, worst first.
void ranking_block(std::string& out, const DiffResult& r) {
  if (r.ranking.empty()) {
    line(out, "no node introduces error: every local result is exact");
  } else {
    line(out, "nodes introducing the most error (local: the node alone on fp64 inputs rounded to its dtypes; rel: RMSE / RMS(fp64);");
    line(out, "sorted by how many times eager's error the compiled one is):");
    line(out, fmt::format("  {:>9} {:>9} {:>8} {:>17}  {:<14} {:<32} {}", "comp rel", "eager rel", "ratio", "max ulp comp/eager", "node", "op",
                          "source"));
    for (size_t i : r.ranking) {
      const NodeError& n = r.nodes[i];
      const bool compiled = n.compiled_local_relative >= 0;
      line(out, fmt::format("  {:>9} {:>9} {:>8} {:>8} / {:>6}  {:<14} {:<32} {}{}", compiled ? num_text(n.compiled_local_relative) : "-",
                            num_text(n.local_relative), compiled ? ratio(n.compiled_vs_eager) : "-",
                            n.compiled_local_ulp < 0 ? "-" : ulp_text(n.compiled_local_ulp), ulp_text(n.local_ulp), n.name, n.target, n.source,
                            n.module_path.empty() ? "" : "  [" + n.module_path + "]"));
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
                     v.has_compiled_local ? ulp_text(v.compiled_local.max_ulp) : "-", ulp_text(v.local.max_ulp), num_text(v.local.max_rel),
                     ulp_text(v.propagated.max_ulp), num_text(v.propagated.max_rel), num_text(v.propagated.rmse));
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

/// The kernel table: the first failing kernel with its nodes' source lines, then the kernel calls (every
/// one for a short table, else the failing ones), or why there is no table.
static void kernels_block(std::string& out, const DiffResult& r) {
  const KernelTable& t = r.kernels;
  if (!t.asked) return;
  if (!t.available) {
    line(out, "kernels: no kernel map (" + t.unavailable + ")");
    line(out, "");
    return;
  }
  line(out, fmt::format("kernels of the compiled graph ({} calls; {} buffers observed, {} judged against eager and fp64, "
                        "{:.1f} MiB copied):", t.kernels.size(), t.observed, t.judged, t.observed_bytes / 1048576.0));
  auto source_of = [&](const std::string& node) -> std::string {
    for (const NodeError& n : r.nodes)
      if (n.name == node) return n.source.empty() ? n.target : n.target + " at " + n.source;
    return "";
  };
  if (t.first_failing >= 0) {
    const KernelCall& k = t.kernels[static_cast<size_t>(t.first_failing)];
    line(out, fmt::format("  first failing kernel: {} (nodes {}): its buffer for {} ({}) fails", k.name, fmt::join(k.nodes, ", "),
                          t.first_failing_node, source_of(t.first_failing_node)));
  } else if (t.judged) {
    line(out, "  every judged buffer passes the rule");
    // Not a contradiction of the node verdict: buffers are judged against eager's propagated values, the
    // node verdict judges each op alone on fp64-exact inputs. Say where its nodes were compiled.
    for (const NodeFinding& f : r.node_verdict.findings)
      if (!f.kernels.empty())
        line(out, fmt::format("  but the node verdict's {} ({}x eager's local error) is computed in {}: its error is absorbed downstream",
                              f.node, fmt::format("{:.3g}", f.ratio), fmt::join(f.kernels, ", ")));
  }
  if (t.inside) {
    line(out, fmt::format("  inside it ({} of at most {} compiles): {}", t.inside->compiles, t.inside->bound, t.inside->summary));
    if (!t.inside->op.empty() && !t.inside->source.empty()) line(out, fmt::format("    {} is {}{}{}", t.inside->op, t.inside->target,
                                                                             t.inside->source.starts_with("gradient of") ? ", the " : " at ",
                                                                             t.inside->source));
    if (!t.inside->code_file.empty()) line(out, "    its generated code: " + t.inside->code_file);
  }
  if (t.nonfinite_origin)
    line(out, fmt::format("  NaN/Inf origin ({}): {}", t.nonfinite_origin->kind, t.nonfinite_origin->detail));
  else if (t.first_nonfinite >= 0)
    line(out, fmt::format("  first kernel writing NaN/Inf: {}", t.kernels[static_cast<size_t>(t.first_nonfinite)].name));
  const bool all = t.kernels.size() <= 12;
  size_t shown = 0;
  for (const KernelCall& k : t.kernels) {
    if (!all && !k.fails) continue;
    ++shown;
    line(out, fmt::format("  {}  [{}]", k.name, fmt::join(k.nodes, ", ")));
    for (const KernelBuffer& b : k.buffers) {
      if (!b.judged) continue;
      line(out, fmt::format("    {:<8} {:<28} {}  rmse {:.3g}  max ulp {:.3g}{}", b.buffer, b.value + (b.reshaped ? " (reshaped)" : ""),
                            b.pass ? "ok  " : "FAIL", b.metrics.rmse, b.metrics.max_ulp, b.pass ? "" : "  " + b.verdict.reason));
    }
  }
  if (shown < t.kernels.size()) line(out, fmt::format("  ({} more kernel calls pass: --json lists them all)", t.kernels.size() - shown));
  line(out, "");
}

std::string to_text(const DiffResult& r) {
  std::string out;
  line(out, fmt::format("{} with {}: compiled = {}, reference = fp64, rule = {}, tol = {}", r.graph, r.inputs, r.compiled,
                        rule_name(r.rule), r.rule.tol));
  if (r.devices.native != "cpu" || r.devices.reference != "cpu")
    line(out, fmt::format("devices: eager on {}, fp64 on {} ({}){}{}", r.devices.native, r.devices.reference, r.devices.why,
                          r.devices.peak_gpu_bytes >= 0 ? fmt::format("; peak GPU memory {:.1f} MiB", r.devices.peak_gpu_bytes / 1048576.0) : "",
                          r.devices.peak_host_bytes >= 0 ? fmt::format("; engine's peak host memory {:.1f} MiB", r.devices.peak_host_bytes / 1048576.0) : ""));
  line(out, "");
  compiles_block(out, r);
  outputs_block(out, r);
  node_verdict_block(out, r);
  kernels_block(out, r);
  if (r.localization) localization_block(out, *r.localization);
  if (r.workaround) workaround_block(out, *r.workaround);
  if (r.compiler_search) compiler_search_block(out, *r.compiler_search);
  ranking_block(out, r);
  per_node_block(out, r);
  notes_block(out, r);
  line(out, fmt::format("{} ({} nodes, {:.2f} s)", wording::verdict(r).text(), r.nodes.size(), r.seconds));
  return out;
}

}  // namespace pt2diff

namespace pt2diff {

std::string hints_to_text(const std::vector<Hint>& hints) {
  if (hints.empty()) return "no experiment applies (no floating output, or the compiler could not run it)\n";
  std::string out;
  for (const Hint& h : hints) {
    out += "\n" + wording::hint_line(h) + "\n";
    if (!h.suggestion.empty()) out += fmt::format("  -> {}\n", h.suggestion);
    for (const std::string& note : h.notes) out += fmt::format("  {}\n", note);
    for (const auto& [name, value] : h.evidence) out += fmt::format("  {:<34} {:.4g}\n", name, value);
  }
  return out;
}

}  // namespace pt2diff
