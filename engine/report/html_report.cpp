// engine/report/html_report.cpp — the report as one self-contained HTML page (pt2diff/html.h).
//
// The same content as the text report, laid out for reading: run and verdicts first, then the
// culprit, its hints, the error profile (svg_plot.h), the culprit's neighbourhood in the graph, the
// probe log, the command to reproduce, and the per-node table. No script: the metric switch of the
// error profile is two radio buttons and CSS.
#include "pt2diff/html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "graphs/rules/rule_registry.h"
#include "graphs/dag_layout.h"
#include "graphs/wording/wording.h"
#include "engine/report/svg_plot.h"
#include "pt2diff/graph.h"

namespace pt2diff {

namespace {

// Series colours of the error profile: used nowhere else on the page (the browser test looks for them).
constexpr const char* kCompiledColor = "#d6336c";
constexpr const char* kEagerLocalColor = "#1c7ed6";
constexpr const char* kPropagatedColor = "#2b8a3e";

std::string esc(const std::string& s) { return html_escape(s); }

std::string num(double v) {
  if (v == 0) return "0";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.2e}", v);
}
std::string ulp(double v) { return std::isinf(v) ? "inf" : std::isnan(v) ? "nan" : fmt::format("{:.1f}", v); }
std::string full(double v) { return fmt::format("{:.9g}", v); }

/// A number in a table cell, with its full precision as hover text.
std::string num_cell(double v, const std::string& shown) { return fmt::format("<td class=\"n\" title=\"{}\">{}</td>", full(v), shown); }

/// "torch.ops.aten.bmm.default" and "aten.bmm.default" → "aten.bmm"; other overloads stay.
std::string short_op(std::string target) {
  if (target.rfind("torch.ops.", 0) == 0) target = target.substr(10);
  const std::string suffix = ".default";
  if (target.size() > suffix.size() && target.compare(target.size() - suffix.size(), suffix.size(), suffix) == 0)
    target.resize(target.size() - suffix.size());
  return target;
}

std::string anchor(const std::string& node) { return "node-" + esc(node); }
std::string node_link(const std::string& node) { return fmt::format("<a class=\"mono\" href=\"#{}\">{}</a>", anchor(node), esc(node)); }

std::string badge(bool pass) { return pass ? "<span class=\"badge pass\">PASS</span>" : "<span class=\"badge fail\">FAIL</span>"; }
/// PASS, SUSPICIOUS or FAIL.
std::string level_badge(Level level) {
  if (level == Level::Suspicious) return "<span class=\"badge suspicious\">SUSPICIOUS</span>";
  return badge(level == Level::Pass);
}

/// Whether the node defines a value compared as floating point (the others have no error to plot).
bool has_floating(const NodeError& n) {
  return std::any_of(n.values.begin(), n.values.end(), [](const ValueError& v) { return v.compared && !v.local.exact_kind; });
}

/// The worst of a metric over a node's compared floating values; NaN when it has none.
template <class Get>
double worst(const NodeError& n, Get get) {
  double w = std::nan("");
  for (const ValueError& v : n.values) {
    if (!v.compared || v.local.exact_kind) continue;
    const double x = get(v);
    if (std::isnan(x)) continue;
    w = std::isnan(w) ? x : std::max(w, x);
  }
  return w;
}

const char* kCss = R"CSS(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--soft:#eef1f4;--bg:#f5f7f9;--card:#fff;--bad:#b42318;--bad-bg:#fdecea;
--good:#1e6b35;--good-bg:#e6f4ea;--warn:#8a5300;--warn-bg:#fff4d6;--accent:#0b57a4}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12.5px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.wrap{max-width:1200px;margin:0 auto;padding:0 24px}
header.top{background:var(--card);border-bottom:1px solid var(--line);padding:18px 0 0}
.brand{color:var(--muted);font-size:12px;letter-spacing:.08em;text-transform:uppercase;font-weight:600}
h1{font-size:21px;margin:4px 0 14px;display:flex;align-items:center;gap:12px;flex-wrap:wrap;font-weight:600}
h1 code{font-size:17px;overflow-wrap:anywhere}
.verdict{font-size:13px;font-weight:700;padding:3px 12px;border-radius:999px;letter-spacing:.05em;white-space:nowrap}
.v-diverged,.v-failed{background:var(--bad-bg);color:var(--bad);border:1px solid #f3b8b1}
.v-agree{background:var(--good-bg);color:var(--good);border:1px solid #a8d8b5}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:8px 28px;margin:0 0 16px}
dl.facts dt{color:var(--muted);font-size:12px}dl.facts dd{margin:0;overflow-wrap:anywhere}
nav{display:flex;gap:20px;flex-wrap:wrap;border-top:1px solid var(--soft);padding:9px 0;font-size:13px}
nav a{color:var(--muted)}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 22px;margin:18px 0}
h2{font-size:17px;margin:0 0 12px;font-weight:600}
h3{font-size:14px;margin:18px 0 8px;font-weight:600}
p{margin:6px 0}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid var(--soft);vertical-align:baseline}
th{font-size:12px;color:var(--muted);font-weight:600;background:#fafbfc;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.brk{overflow-wrap:anywhere}
tbody tr:hover td{background:#f7f9fb}
tr.is-culprit td{background:#fdf1f0}tr.is-culprit:hover td{background:#fbe5e3}
.table-scroll{overflow-x:auto}
.badge{display:inline-block;font-size:11.5px;font-weight:700;padding:1px 8px;border-radius:4px;letter-spacing:.03em}
.badge.pass{background:var(--good-bg);color:var(--good)}.badge.fail{background:var(--bad-bg);color:var(--bad)}
.badge.suspicious{background:var(--warn-bg);color:var(--warn)}
.v-suspicious{background:var(--warn-bg);color:var(--warn);border:1px solid #f0d49a}
.level-note{font-size:12.5px;margin:2px 0}
.badge.kind{background:#eae6fb;color:#4b2e9e}.badge.flaky,.badge.inconclusive{background:var(--warn-bg);color:var(--warn)}
.chip{display:inline-block;font-size:12px;padding:1px 9px;border-radius:999px;background:var(--soft);color:#374151}
.tag{display:inline-block;font-size:11px;padding:0 6px;border-radius:4px;background:#fff1dc;color:#8a4b00;margin-left:6px}
.lead{font-size:15px;margin:4px 0 14px}
.grid2{display:grid;grid-template-columns:minmax(0,1.5fr) minmax(0,1fr);gap:22px}
@media (max-width:900px){.grid2{grid-template-columns:1fr}}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
.hint{border:1px solid var(--line);border-left:4px solid var(--accent);border-radius:8px;padding:12px 16px;margin:12px 0}
.hint-head{display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin-bottom:6px}
.hint .summary{font-size:14.5px}
.suggestion{background:#eef5fd;border-radius:6px;padding:8px 12px;margin:10px 0}
.suggestion .arrow{color:var(--accent);font-weight:700}
.warnbox{background:var(--warn-bg);color:var(--warn);border-radius:8px;padding:8px 14px;margin:10px 0}
ul.notes{margin:6px 0;padding-left:20px}ul.notes li{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table.evidence{width:auto;min-width:420px}
table.evidence td:first-child{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.bar{display:inline-block;height:8px;border-radius:2px;background:#9db7d5;vertical-align:middle}
pre.cmd{background:#0f1720;color:#e8edf2;padding:12px 16px;border-radius:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:8px 0}
.figure{overflow-x:auto}
.figure svg{max-width:100%;height:auto;display:block}
.figure.natural svg{max-width:none;margin:0 auto}
.caption{color:var(--muted);font-size:12.5px;margin-top:6px}
.muted{color:var(--muted)}
details>summary{cursor:pointer;font-weight:600;margin:6px 0 10px}
.tabs>input{position:absolute;opacity:0;pointer-events:none}
.tabs>label{display:inline-block;padding:4px 12px;border:1px solid var(--line);border-radius:6px;margin:0 6px 10px 0;cursor:pointer;font-size:13px;color:var(--muted)}
.tabs>.panel{display:none}
#metric-ulp:checked~.panel-ulp,#metric-rel:checked~.panel-rel{display:block}
#metric-ulp:checked+label,#metric-rel:checked+label{background:var(--fg);color:#fff;border-color:var(--fg)}
.tabs>input:focus-visible+label{outline:2px solid var(--accent)}
.legend{display:flex;gap:18px;flex-wrap:wrap;font-size:12.5px;color:var(--muted);margin-top:8px}
.legend i{display:inline-block;width:14px;height:10px;border-radius:3px;margin-right:6px;vertical-align:-1px;border:1.5px solid}
footer{color:var(--muted);font-size:12px;padding:8px 0 30px}
)CSS";

// --- sections ------------------------------------------------------------------------------------

std::string device_of(const DiffResult& r, const HtmlOptions& o) {
  if (!o.device.empty()) return o.device;
  const auto open = r.compiled.rfind('('), close = r.compiled.rfind(')');
  if (open != std::string::npos && close != std::string::npos && close > open) return r.compiled.substr(open + 1, close - open - 1);
  return "";
}

std::string header(const DiffResult& r, const HtmlOptions& o, bool graph_failed, bool has_localization) {
  const wording::VerdictWords verdict = wording::verdict(r);
  const Level nodes = r.node_verdict.level;
  const char* vclass = graph_failed ? "v-failed" : r.diverged || nodes == Level::Fail ? "v-diverged"
                       : r.suspicious || nodes == Level::Suspicious ? "v-suspicious" : "v-agree";
  std::string h = "<header class=\"top\"><div class=\"wrap\">\n<div class=\"brand\">pt2diff report</div>\n";
  h += fmt::format("<h1><span class=\"verdict {}\">{}</span><code>{}</code>{}</h1>\n", vclass, verdict.word, esc(r.graph),
                   verdict.note.empty() ? "" : " <small class=\"muted\">(" + esc(verdict.note) + ")</small>");
  auto fact = [&](const std::string& k, const std::string& v) { h += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>", k, v); };
  h += "<dl class=\"facts\">";
  fact("graph", "<code>" + esc(r.graph) + "</code>");
  fact("inputs", "<code>" + esc(r.inputs) + "</code>");
  fact("compiled", "<code>" + esc(r.compiled) + "</code>");
  const std::string device = device_of(r, o);
  fact("device", device.empty() ? "<span class=\"muted\">not recorded</span>" : "<code>" + esc(device) + "</code>");
  fact("reference", r.devices.reference == "cpu" && r.devices.native == "cpu"
                        ? std::string("fp64 (op by op)")
                        : fmt::format("fp64 (op by op) on <code>{}</code>, eager on <code>{}</code> <span class=\"muted\">({})</span>",
                                      esc(r.devices.reference), esc(r.devices.native), esc(r.devices.why)));
  std::string rule = "<code>" + esc(rule_name(r.rule)) + "</code>";
  if (const RuleKind& kind = rule_kind(r.rule.kind); kind.describe)
    rule += " <span class=\"muted\">(" + esc(kind.describe(r.rule)) + ")</span>";
  fact("rule", rule);
  fact("tol", fmt::format("<code>{:g}</code>", r.rule.tol));
  const size_t failing = std::count_if(r.outputs.begin(), r.outputs.end(), [](const OutputVerdict& v) { return !v.verdict.pass; });
  const size_t suspicious =
      std::count_if(r.outputs.begin(), r.outputs.end(), [](const OutputVerdict& v) { return v.verdict.level == Level::Suspicious; });
  const size_t standing_out = r.node_verdict.findings.size();
  fact("outcome", fmt::format("{} of {} outputs fail{}{} &middot; {} nodes &middot; {:.2f} s", failing, r.outputs.size(),
                              suspicious ? fmt::format(", {} suspicious", suspicious) : "",
                              standing_out ? fmt::format(" &middot; node verdict <strong>{}</strong> ({} finding{})", level_name(r.node_verdict.level),
                                                         standing_out, standing_out == 1 ? "" : "s")
                                           : "",
                              r.nodes.size(), r.seconds));
  h += "</dl>\n<nav><a href=\"#outputs\">Outputs</a>";
  if (has_localization) h += "<a href=\"#culprit\">Culprit</a><a href=\"#reproduce\">Reproduce</a><a href=\"#hints\">Hints</a>";
  h += "<a href=\"#profile\">Error profile</a>";
  if (has_localization && o.program) h += "<a href=\"#neighbourhood\">Neighbourhood</a>";
  if (has_localization) h += "<a href=\"#probes\">Probes</a>";
  else h += "<a href=\"#reproduce\">Reproduce</a>";
  h += "<a href=\"#nodes\">Nodes</a></nav>\n</div></header>\n";
  return h;
}

/// The node verdict (judge_nodes): every finding with its two local errors and their ratio, the
/// confirmation, or one line when no node stands out.
std::string node_verdict_section(const DiffResult& r) {
  const NodeVerdict& nv = r.node_verdict;
  if (!nv.available) return "";
  std::string s = "<section id=\"node-verdict\"><h2>Node verdict</h2>\n";
  s += fmt::format("<p class=\"muted\">Each op alone through the compiler (the exploded compile), fed fp64 values rounded to its dtypes, "
                   "against eager on the same inputs: compiled local RMSE to fp64 over eager's, floored at the dtype's rounding "
                   "(<code>--node-ratio {:g}</code>{}). {} values judged; worst <code>{}</code> at {:.3g}&times;.</p>\n",
                   r.rule.node_ratio, r.rule.node_fail_ratio > 0 ? fmt::format(", <code>--node-fail-ratio {:g}</code>", r.rule.node_fail_ratio) : "",
                   nv.judged, esc(nv.worst_node), nv.worst_ratio);
  if (nv.findings.empty()) return s + "<p>No node stands out.</p></section>\n";
  s += "<div class=\"table-scroll\"><table><thead><tr><th></th><th>node</th><th>op</th><th>source</th><th class=\"n\">compiled local RMSE</th>"
       "<th class=\"n\">eager local RMSE</th><th class=\"n\">ratio</th><th class=\"n\">roundoffs</th><th>same op and shape</th></tr></thead><tbody>\n";
  for (const NodeFinding& f : nv.findings) {
    std::vector<std::string> also;
    for (size_t i = 0; i < f.also.size(); ++i) also.push_back(fmt::format("<code>{}</code> {:.3g}&times;", esc(f.also[i]), f.also_ratios[i]));
    s += fmt::format("<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"brk\">{}{}</td>", level_badge(f.level),
                     esc(f.node), esc(f.op), esc(f.source), f.module_path.empty() ? "" : " <span class=\"muted\">[" + esc(f.module_path) + "]</span>");
    s += num_cell(f.compiled_local.rmse, num(f.compiled_local.rmse)) + num_cell(f.eager_local.rmse, num(f.eager_local.rmse)) +
         num_cell(f.ratio, fmt::format("{:.3g}&times;", f.ratio)) + num_cell(f.roundoffs, num(f.roundoffs));
    s += fmt::format("<td class=\"brk\">{}</td></tr>\n", fmt::join(also, ", "));
  }
  s += "</tbody></table></div>\n";
  if (nv.confirmation) s += "<p>" + wording::confirmation(*nv.confirmation).html() + "</p>\n";
  return s + "</section>\n";
}

std::string outputs_section(const DiffResult& r) {
  std::string s = "<section id=\"outputs\"><h2>Outputs</h2>\n";
  s += "<p class=\"muted\">Compiled against eager, with fp64 as the referee; RMSE and max ULP are distances to fp64.</p>\n";
  s += "<div class=\"table-scroll\"><table><thead><tr><th></th><th>output</th><th>role</th><th>reason</th><th class=\"n\">compiled RMSE</th>"
       "<th class=\"n\">eager RMSE</th><th class=\"n\">ratio</th><th class=\"n\">max ulp compiled</th><th class=\"n\">max ulp eager</th>"
       "<th>detail</th></tr></thead><tbody>\n";
  for (const OutputVerdict& o : r.outputs) {
    const bool no_value = o.verdict.reason == "no_compiled_value";
    const Verdict& v = o.verdict;
    s += fmt::format("<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td>", level_badge(v.level), esc(o.name),
                     esc(o.role), esc(v.reason));
    s += no_value ? "<td class=\"n muted\">&ndash;</td>" : num_cell(o.compiled_to_fp64.rmse, num(o.compiled_to_fp64.rmse));
    s += num_cell(o.eager_to_fp64.rmse, num(o.eager_to_fp64.rmse));
    s += no_value ? "<td class=\"n muted\">&ndash;</td>" : num_cell(v.error_ratio, fmt::format("{:.3g}&times;", v.error_ratio));
    s += no_value ? "<td class=\"n muted\">&ndash;</td>" : num_cell(o.compiled_to_fp64.max_ulp, ulp(o.compiled_to_fp64.max_ulp));
    s += num_cell(o.eager_to_fp64.max_ulp, ulp(o.eager_to_fp64.max_ulp));
    std::string detail = no_value ? "no compiled value" : esc(v.detail);
    if (v.level == Level::Suspicious)
      detail += "<p class=\"level-note\"><strong>suspicious:</strong> " + wording::suspicious(v, r.rule).html() + "</p>";
    if (!v.blind_spot.empty()) detail += "<p class=\"level-note\"><strong>vacuous</strong> " + wording::vacuous(v, r.rule).html() + "</p>";
    s += fmt::format("<td class=\"brk\">{}</td></tr>\n", detail);
  }
  s += "</tbody></table></div>\n";
  // What the user must know to read the numbers (a GPU export run on the CPU, in-place mutation).
  for (const std::string& w : r.warnings) s += "<p class=\"warnbox\"><strong>warning:</strong> " + esc(w) + "</p>\n";
  if (!r.fixups.empty()) {
    s += "<details><summary>fp64 fix-ups applied</summary><ul class=\"notes\">";
    for (const std::string& f : r.fixups) s += "<li>" + esc(f) + "</li>";
    s += "</ul></details>\n";
  }
  if (!r.compiles.empty()) {
    s += "<h3>Compiles</h3><div class=\"table-scroll\"><table><thead><tr><th>what</th><th class=\"n\">nodes</th><th>status</th>"
         "<th class=\"n\">compile</th><th class=\"n\">run</th><th>message</th></tr></thead><tbody>\n";
    for (const CompileRecord& c : r.compiles)
      s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.2f} s</td><td class=\"n\">{:.2f} ms</td><td class=\"brk\">{}</td></tr>\n",
                       esc(c.what), c.nodes, c.ok ? "<span class=\"badge pass\">ok</span>" : "<span class=\"badge fail\">" + esc(failure_kind_name(c.failure)) + "</span>",
                       c.compile_seconds, c.run_seconds * 1e3,
                       esc(c.message + (c.shapes && !c.shapes->dims.empty() ? (c.message.empty() ? "" : "; ") + shapes_line(*c.shapes) : "")));
    s += "</tbody></table></div>\n";
  }
  return s + "</section>\n";
}

std::string culprit_section(const Localization& l, const std::string& reproduce) {
  const Culprit& c = l.culprit;
  const bool named = c.named();
  const char* kind = culprit_kind_name(c.kind);
  std::string s = "<section id=\"culprit\"><h2>Culprit</h2>\n";
  s += fmt::format("<p class=\"lead\"><span class=\"badge {}\">{}</span> {}</p>\n", named ? "kind" : kind, esc(kind), esc(c.summary));
  if (!c.nodes.empty()) {
    s += "<div class=\"table-scroll\"><table><thead><tr><th>node</th><th>op</th><th>source</th><th>module</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < c.nodes.size(); ++i)
      s += fmt::format("<tr class=\"is-culprit\"><td>{}</td><td class=\"mono\">{}</td><td class=\"mono brk\">{}</td><td class=\"mono\">{}</td></tr>\n",
                       node_link(c.nodes[i]), i < c.ops.size() ? esc(c.ops[i]) : "", i < c.sources.size() ? esc(c.sources[i]) : "",
                       i < c.module_paths.size() ? esc(c.module_paths[i]) : "");
    s += "</tbody></table></div>\n";
  }
  if (!l.evidence.empty()) {
    s += "<ul class=\"evidence\">\n";
    for (const std::string& e : l.evidence) s += "<li>Evidence: " + esc(e) + "</li>\n";
    s += "</ul>\n";
  }
  s += "<div class=\"grid2\" style=\"margin-top:14px\"><div>\n<h3 style=\"margin-top:0\">The numbers</h3><dl class=\"kv\">";
  auto kv = [&](const std::string& k, const std::string& v) { s += fmt::format("<dt>{}</dt><dd>{}</dd>", k, v); };
  if (named) {
    kv("value judged", "<code>" + esc(c.value) + "</code> (window fed with fp64-exact inputs)");
    kv("compiled RMSE to fp64", fmt::format("<span title=\"{}\">{}</span>", full(c.compiled_to_fp64.rmse), num(c.compiled_to_fp64.rmse)));
    kv("eager RMSE to fp64", fmt::format("<span title=\"{}\">{}</span>", full(c.eager_to_fp64.rmse), num(c.eager_to_fp64.rmse)));
    if (c.eager_to_fp64.rmse > 0 && std::isfinite(c.compiled_to_fp64.rmse))
      kv("ratio", fmt::format("{:.3g}&times;", c.compiled_to_fp64.rmse / c.eager_to_fp64.rmse));
    kv("max ulp compiled / eager", fmt::format("{} / {}", ulp(c.compiled_to_fp64.max_ulp), ulp(c.eager_to_fp64.max_ulp)));
    kv("verdict", fmt::format("{} <code>{}</code><br><span class=\"muted\">{}</span>", level_badge(c.verdict.level), esc(c.verdict.reason),
                              esc(c.verdict.detail)));
  }
  std::string failing;
  for (const std::string& o : l.failing_outputs) failing += (failing.empty() ? "" : ", ") + ("<code>" + esc(o) + "</code>");
  kv("failing outputs", failing.empty() ? "&ndash;" : failing);
  kv("search", fmt::format("cone of {} nodes, {} compiles (budget {}), {:.2f} s", l.cone_size, l.compiles, l.budget, l.seconds));
  if (!l.exploded_suspects.empty()) {
    std::string sus;
    for (const std::string& n : l.exploded_suspects) sus += (sus.empty() ? "" : ", ") + node_link(n);
    kv("exploded compile flagged", sus + fmt::format(" <span class=\"muted\">({})</span>",
                                                     l.exploded_agrees ? "agrees with the bisection" : "the bisection found otherwise"));
  }
  s += "</dl></div>\n<div id=\"reproduce\">" + reproduce + "</div></div>\n";
  return s + "</section>\n";
}

std::string compiler_search_section(const CompilerSearch& c) {
  std::string s = "<section id=\"compiler-search\"><h2>Compiler search: the decision that makes the whole graph diverge</h2>\n";
  s += fmt::format("<p class=\"lead\"><span class=\"badge {}\">{}</span> {}</p>\n", c.verified ? "pass" : "kind",
                   esc(compiler_search_conclusion_name(c.conclusion)), esc(c.summary));
  s += fmt::format("<p class=\"muted\">Why: {} ({} compiles, {:.2f} s)</p>\n", esc(c.why), c.compiles, c.seconds);
  if (c.decision && !c.decision->nodes.empty()) {
    s += "<div class=\"table-scroll\"><table><thead><tr><th>node</th><th>op</th><th>source</th><th>module</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < c.decision->nodes.size(); ++i)
      s += fmt::format("<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono brk\">{}</td><td class=\"mono\">{}</td></tr>\n",
                       node_link(c.decision->nodes[i]), esc(i < c.ops.size() ? c.ops[i] : ""), esc(i < c.sources.size() ? c.sources[i] : ""),
                       esc(i < c.module_paths.size() ? c.module_paths[i] : ""));
    s += "</tbody></table></div>\n";
  }
  if (!c.workaround.empty())
    s += fmt::format("<p class=\"muted\">In your program:</p><pre class=\"cmd\"><code>{}</code></pre>\n", esc(c.workaround));
  return s + "</section>\n";
}

std::string workaround_section(const Workaround& w) {
  std::string s = "<section id=\"workaround\"><h2>Workaround: the smallest eager set</h2>\n";
  s += fmt::format("<p class=\"lead\"><span class=\"badge {}\">{}</span> {}</p>\n", w.verified ? "pass" : "kind",
                   esc(workaround_conclusion_name(w.conclusion)), esc(w.summary));
  if (!w.nodes.empty()) {
    s += "<div class=\"table-scroll\"><table><thead><tr><th>node left eager</th><th>op</th><th>source</th><th>module</th></tr></thead><tbody>\n";
    for (const EagerNode& n : w.nodes)
      s += fmt::format("<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono brk\">{}</td><td class=\"mono\">{}</td></tr>\n",
                       node_link(n.node), esc(n.op), esc(n.source), esc(n.module_path));
    s += "</tbody></table></div>\n";
  }
  if (!w.lines.empty()) {
    std::string code;
    for (const std::string& l : w.lines) code += esc(l) + "\n";
    s += fmt::format("<p class=\"muted\">{} ({} compiles, {:.2f} s):</p><pre class=\"cmd\"><code>{}</code></pre>\n",
                     w.verified ? "Add to your program" : "Tried, and it did NOT pass: " + esc(w.verification), w.compiles, w.seconds, code);
  }
  return s + "</section>\n";
}

std::string hints_section(const Localization& l) {
  std::string s = "<section id=\"hints\"><h2>Hints</h2>\n";
  if (l.hints.empty()) {
    s += "<p class=\"muted\">No hints: they are computed for a named culprit (a single op or a window).</p>";
    return s + "</section>\n";
  }
  s += "<p class=\"muted\">Each hint comes from an experiment on the culprit window, fed with the fp64 values of its inputs rounded to their dtypes.</p>\n";
  for (const Hint& h : l.hints) {
    s += "<article class=\"hint\"><div class=\"hint-head\">";
    s += fmt::format("<span class=\"badge kind\">{}</span><span class=\"chip mono\">{}</span></div>\n", esc(h.kind), esc(h.finding));
    s += fmt::format("<p class=\"summary\">{}</p>\n", esc(h.summary));
    if (!h.suggestion.empty()) s += fmt::format("<div class=\"suggestion\"><span class=\"arrow\">&rarr;</span> {}</div>\n", esc(h.suggestion));
    if (!h.notes.empty()) {
      constexpr size_t kShown = 8;
      s += "<ul class=\"notes\">";
      for (size_t i = 0; i < h.notes.size() && i < kShown; ++i) s += "<li>" + esc(h.notes[i]) + "</li>";
      s += "</ul>\n";
      if (h.notes.size() > kShown) {
        s += fmt::format("<details><summary>{} more notes</summary><ul class=\"notes\">", h.notes.size() - kShown);
        for (size_t i = kShown; i < h.notes.size(); ++i) s += "<li>" + esc(h.notes[i]) + "</li>";
        s += "</ul></details>\n";
      }
    }
    if (!h.evidence.empty()) {
      // RMSE-like numbers get a bar on a log scale shared within the hint, so their ratios show.
      double lo = std::numeric_limits<double>::infinity(), hi = 0;
      for (const auto& [name, v] : h.evidence)
        if (name.rfind("rmse", 0) == 0 && v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      const bool bars = hi > 0 && lo < hi;
      s += "<table class=\"evidence\"><thead><tr><th>evidence</th><th class=\"n\">value</th>";
      s += bars ? "<th>log scale</th>" : "";
      s += "</tr></thead><tbody>\n";
      for (const auto& [name, v] : h.evidence) {
        s += fmt::format("<tr><td>{}</td>{}", esc(name), num_cell(v, std::abs(v) >= 1e4 || (v != 0 && std::abs(v) < 1e-2) ? num(v) : fmt::format("{:.4g}", v)));
        if (bars) {
          const bool barred = name.rfind("rmse", 0) == 0 && v > 0 && std::isfinite(v);
          const double lo_edge = std::log10(lo) - 0.5;
          const double width = barred ? 6 + 194 * (std::log10(v) - lo_edge) / (std::log10(hi) - lo_edge) : 0;
          s += barred ? fmt::format("<td><span class=\"bar\" style=\"width:{:.0f}px\"></span></td>", width)
                      : (name.rfind("rmse", 0) == 0 ? "<td class=\"muted\">0</td>" : "<td></td>");
        }
        s += "</tr>\n";
      }
      s += "</tbody></table>\n";
    }
    s += "</article>\n";
  }
  return s + "</section>\n";
}

// --- the error profile -------------------------------------------------------------------------------

/// One metric of the error profile: its tab, its axis and the three values it plots per node.
struct ProfileMetric {
  std::string id, label, axis;
  std::function<double(const NodeError&)> compiled, local, propagated;
};

/// The two metrics of the switch: max ulp (checked first), then max relative error.
std::vector<ProfileMetric> profile_metrics() {
  return {
      {"error-profile", "max ulp", "max error (ulp, log scale)",
       [](const NodeError& n) { return n.compiled_local_ulp >= 0 ? n.compiled_local_ulp : std::nan(""); },
       [](const NodeError& n) { return has_floating(n) ? n.local_ulp : std::nan(""); },
       [](const NodeError& n) { return worst(n, [](const ValueError& v) { return v.propagated.max_ulp; }); }},
      {"error-profile-rel", "max relative error", "max relative error (log scale)",
       [](const NodeError& n) {
         return worst(n, [](const ValueError& v) { return v.has_compiled_local ? v.compiled_local.max_rel : std::nan(""); });
       },
       [](const NodeError& n) { return worst(n, [](const ValueError& v) { return v.local.max_rel; }); },
       [](const NodeError& n) { return worst(n, [](const ValueError& v) { return v.propagated.max_rel; }); }},
  };
}

/// The plot's frame: title, axes and size, the same for both metrics.
PlotOptions profile_plot_options(const ProfileMetric& metric) {
  PlotOptions o;
  o.id = metric.id;
  o.title = "Error per node, in graph order";
  o.x_label = "node (graph order)";
  o.y_label = metric.axis;
  o.log_y = true;
  o.width = 1130;
  o.height = 420;
  return o;
}

/// The reference lines of metric `m` (0: ulp, 1: relative): 0.5 ulp on the ulp plot, and the rule's own line (rule_registry.h).
void add_rule_lines(PlotOptions& o, const ToleranceRule& rule, size_t m) {
  if (m == 0) o.h_lines.push_back({"0.5 ulp: correctly rounded", 0.5, "#7048e8"});
  if (const RuleKind& kind = rule_kind(rule.kind); kind.plot_line)
    if (const std::optional<RuleLine> line = kind.plot_line(rule, static_cast<int>(m))) o.h_lines.push_back({line->label, line->y, "#e8590c"});
}

/// The panel of metric `m` (0: ulp, 1: relative): one point per node in each series, a band on the culprit.
std::string profile_panel(const DiffResult& r, const std::set<std::string>& culprit, const ProfileMetric& metric, size_t m,
                          bool any_compiled) {
  PlotSeries compiled{"compiled local", kCompiledColor, {}, false, true};
  PlotSeries local{"eager local", kEagerLocalColor, {}, false, true};
  PlotSeries propagated{"eager propagated", kPropagatedColor, {}, true, false};
  PlotOptions o = profile_plot_options(metric);
  // The culprit band: 0.9 node wide, at most about 24 px of a 1000 px plot.
  const double half_band = std::min(0.45, 12.0 * static_cast<double>(r.nodes.size()) / 1000);
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeError& n = r.nodes[i];
    const double x = static_cast<double>(i);
    const double c = metric.compiled(n), e = metric.local(n), p = metric.propagated(n);
    auto fmt_v = [&](double v) { return std::isnan(v) ? std::string("n/a") : m == 0 ? ulp(v) + " ulp" : num(v); };
    const std::string where = fmt::format("#{} {} ({})", i, n.name, short_op(n.target));
    compiled.points.emplace_back(x, c);
    compiled.point_titles.push_back(fmt::format("{}: compiled local {}", where, fmt_v(c)));
    local.points.emplace_back(x, e);
    local.point_titles.push_back(fmt::format("{}: eager local {}", where, fmt_v(e)));
    propagated.points.emplace_back(x, p);
    propagated.point_titles.push_back(fmt::format("{}: eager propagated {}", where, fmt_v(p)));
    o.x_ticks.emplace_back(x, n.name);
    if (culprit.count(n.name)) {
      o.x_bands.emplace_back(x - half_band, x + half_band);
      o.x_band_labels.push_back(o.x_band_labels.empty() ? "culprit" : "");
    }
  }
  add_rule_lines(o, r.rule, m);
  std::vector<PlotSeries> series;
  if (any_compiled) series.push_back(compiled);
  series.push_back(local);
  series.push_back(propagated);
  return fmt::format("<div class=\"panel panel-{}\"><div class=\"figure\">\n{}</div></div>\n", m == 0 ? "ulp" : "rel", svg_line_plot(series, o));
}

/// How to read the profile; says so when there is no compiled local error.
std::string profile_caption(bool any_compiled) {
  std::string s = "<p class=\"caption\">Local: the node alone, fed with the fp64 values of its inputs rounded to its dtypes "
                  "(compiled local: the same through the exploded compile). Propagated: the eager run from the graph inputs. "
                  "Each node's worst value, in ulp of its working precision (the coarsest floating dtype among its inputs and outputs) or "
                  "relative to fp64; exact results (0) have no point on the log scale. Where the compiled local error equals the eager one, "
                  "the eager point covers it. ";
  if (!any_compiled) s += "No compiled local error: the exploded compile did not run. ";
  return s + "Hover a point for its node.</p>\n";
}

std::string profile_section(const DiffResult& r, const std::set<std::string>& culprit) {
  std::string s = "<section id=\"profile\"><h2>Error profile</h2>\n";
  if (r.nodes.empty()) return s + "<p class=\"muted\">The graph has no nodes.</p></section>\n";
  bool any_compiled = false;
  for (const NodeError& n : r.nodes) any_compiled = any_compiled || n.compiled_local_ulp >= 0;
  const std::vector<ProfileMetric> metrics = profile_metrics();
  // The metric switch: a radio button per metric, then the panels it shows (CSS, no script).
  s += "<div class=\"tabs\">\n";
  for (size_t m = 0; m < metrics.size(); ++m)
    s += fmt::format("<input type=\"radio\" name=\"metric\" id=\"{0}\"{1}><label for=\"{0}\">{2}</label>\n", m == 0 ? "metric-ulp" : "metric-rel",
                     m == 0 ? " checked" : "", metrics[m].label);
  for (size_t m = 0; m < metrics.size(); ++m) s += profile_panel(r, culprit, metrics[m], m, any_compiled);
  s += "</div>\n" + profile_caption(any_compiled);
  return s + "</section>\n";
}

// --- the DAG neighbourhood (laid out by graphs/dag_layout.h) ---------------------------------------

/// The culprit's nodes in the graph (names the graph does not have are left out).
std::set<NodeId> culprit_node_ids(const Graph& g, const Localization& l) {
  std::map<std::string, NodeId> by_name;
  for (const Node& n : g.nodes()) by_name[n.name] = n.id;
  std::set<NodeId> culprit;
  for (const std::string& name : l.culprit.nodes)
    if (auto it = by_name.find(name); it != by_name.end()) culprit.insert(it->second);
  return culprit;
}

std::string clip(const std::string& t, size_t n) { return t.size() <= n ? t : t.substr(0, n - 1) + "\u2026"; }

/// The <svg> element's opening: size, title, arrow markers and the white background.
std::string dag_svg_open(const DagLayout& d, int hops) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"culprit-dag\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" "
      "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
      "<title>The culprit with its producers and consumers up to {2} hops</title>\n"
      "<defs><marker id=\"dag-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
      "<path d=\"M0 0L10 5L0 10z\" fill=\"#8c959f\"/></marker>"
      "<marker id=\"dag-arrow-hot\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
      "<path d=\"M0 0L10 5L0 10z\" fill=\"#b42318\"/></marker></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
      d.width, d.height, hops);
}

/// An edge's path data: down through each dummy (straight), a curve between layers.
std::string edge_path(const std::vector<DagItem>& items, const DagEdge& e) {
  const DagItem &a = items[e.from], &b = items[e.to];
  std::string d = fmt::format("M{:.1f} {:.1f}", a.x + kBoxW / 2, a.y + kBoxH);
  double cx = a.x + kBoxW / 2, cy = a.y + kBoxH;
  auto curve_to = [&](double x2, double y2) {
    const double dy = (y2 - cy) / 2;
    d += fmt::format("C{:.1f} {:.1f} {:.1f} {:.1f} {:.1f} {:.1f}", cx, cy + dy, x2, y2 - dy, x2, y2);
    cx = x2;
    cy = y2;
  };
  for (size_t v : e.via) {
    const DagItem& dummy = items[v];
    curve_to(dummy.x + kDummyW / 2, dummy.y);
    d += fmt::format("L{:.1f} {:.1f}", cx, dummy.y + kBoxH);
    cy = dummy.y + kBoxH;
  }
  curve_to(b.x + kBoxW / 2, b.y - 1);
  return d;
}

/// Every edge as a <path> with its value as hover text; edges into or out of the culprit in red.
std::string dag_edges_svg(const Graph& g, const DagLayout& d, const std::set<NodeId>& culprit) {
  std::string svg;
  for (const DagEdge& e : d.edges) {
    const DagItem &a = d.items[e.from], &b = d.items[e.to];
    const bool hot = (!a.is_input && culprit.count(a.id)) || culprit.count(b.id);
    const Value& v = g.value(e.value);
    const std::string title = v.meta ? fmt::format("{}: {}{}", v.name, dtype_name(v.meta->dtype), v.meta->shape_str()) : v.name;
    svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" marker-end=\"url(#{})\"><title>{}</title></path>\n",
                       edge_path(d.items, e), hot ? "#b42318" : "#8c959f", hot ? 1.6 : 1.2, hot ? "dag-arrow-hot" : "dag-arrow", esc(title));
  }
  return svg;
}

/// What a box shows (three lines), its hover text and its style.
struct DagBox {
  std::string name, line2, line3, title, fill = "#ffffff", stroke = "#8c959f", extra;
  double rx = 6, stroke_w = 1.2;
};

/// Each graph input's kind (user input, parameter, buffer, ...), by value.
std::map<ValueId, std::string> input_roles(const Program& program) {
  std::map<ValueId, std::string> roles;
  for (const InputSpec& spec : program.ir.input_specs)
    for (ValueId v : spec.arg.tensor_values()) roles[v] = std::string(input_kind_name(spec.kind));
  return roles;
}

/// A graph input: its name, kind and dtype/shape, in a grey pill.
DagBox input_box(const Graph& g, const DagItem& it, const std::map<ValueId, std::string>& roles) {
  DagBox b;
  const Value& v = g.value(it.id);
  b.name = v.name;
  b.line2 = roles.count(it.id) ? roles.at(it.id) : "graph input";
  if (v.meta) b.line3 = fmt::format("{}{}", dtype_name(v.meta->dtype), v.meta->shape_str());
  b.title = fmt::format("{} ({})\n{}", v.name, b.line2, b.line3);
  b.fill = "#f1f3f5";
  b.stroke = "#adb5bd";
  b.rx = kBoxH / 2;
  return b;
}

/// A node: its name, op and local error; red for the culprit, dashed orange for a node the exploded compile flagged.
DagBox node_box(const Graph& g, const DagItem& it, bool is_culprit, const std::set<std::string>& suspects,
                const std::map<std::string, const NodeError*>& errors) {
  DagBox b;
  const Node& n = g.node(it.id);
  b.name = n.name;
  b.line2 = short_op(n.target);
  const auto found = errors.find(n.name);
  const NodeError* err = found != errors.end() ? found->second : nullptr;
  if (err && has_floating(*err))
    b.line3 = err->compiled_local_ulp >= 0 ? fmt::format("ulp: comp {} \u00b7 eager {}", ulp(err->compiled_local_ulp), ulp(err->local_ulp))
                                           : fmt::format("ulp: eager {}", ulp(err->local_ulp));
  bool output = false;
  for (ValueId v : n.output_values()) output = output || g.value(v).is_graph_output;
  b.title = fmt::format("{} = {}\n{}{}{}", n.name, n.target, n.source.origin(),
                        n.source.module_path().empty() ? "" : "\nmodule: " + n.source.module_path(),
                        b.line3.empty() ? "" : "\nlocal error, " + b.line3);
  if (is_culprit) {
    b.fill = "#fdecea";
    b.stroke = "#b42318";
    b.stroke_w = 2.2;
  } else if (suspects.count(n.name)) {
    b.stroke = "#e8590c";
    b.stroke_w = 1.8;
    b.extra = " stroke-dasharray=\"5 3\"";
  }
  if (output) b.line2 += "  \u2192 output";
  return b;
}

/// One box: a <g> with the hover text, the rectangle and its lines (clipped to fit).
std::string dag_box_svg(const DagItem& it, const DagBox& b, bool is_culprit) {
  std::string svg = fmt::format("<g class=\"dag-node{}\"><title>{}</title>", is_culprit ? " culprit" : "", esc(b.title));
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" rx=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>", it.x,
                     it.y, kBoxW, kBoxH, b.rx, b.fill, b.stroke, b.stroke_w, b.extra);
  const double cx = it.x + kBoxW / 2;
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"12\" font-weight=\"600\" fill=\"{}\">{}</text>", cx,
                     it.y + 18, is_culprit ? "#8a1c12" : "#1f2328", esc(clip(b.name, 25)));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#59636e\" font-family=\"ui-monospace, Menlo, Consolas, monospace\" "
                     "font-size=\"10.5\">{}</text>",
                     cx, it.y + 33, esc(clip(b.line2, 32)));
  if (!b.line3.empty())
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#59636e\" font-size=\"10\">{}</text>", cx, it.y + 47,
                       esc(clip(b.line3, 38)));
  return svg + "</g>\n";
}

/// Every box but the dummies, graph inputs first.
std::string dag_boxes_svg(const DiffResult& r, const Program& program, const DagLayout& d, const std::set<NodeId>& culprit) {
  const Graph& g = program.ir.graph;
  const Localization& l = *r.localization;
  const std::set<std::string> suspects(l.exploded_suspects.begin(), l.exploded_suspects.end());
  std::map<std::string, const NodeError*> errors;
  for (const NodeError& n : r.nodes) errors[n.name] = &n;
  const std::map<ValueId, std::string> roles = input_roles(program);
  std::string svg;
  for (const DagItem& it : d.items) {
    if (it.dummy) continue;
    const bool is_culprit = !it.is_input && culprit.count(it.id);
    const DagBox b = it.is_input ? input_box(g, it, roles) : node_box(g, it, is_culprit, suspects, errors);
    svg += dag_box_svg(it, b, is_culprit);
  }
  return svg;
}

/// The legend of the box styles and the caption.
std::string dag_legend(int hops) {
  std::string s = "<div class=\"legend\"><span><i style=\"background:#fdecea;border-color:#b42318\"></i>culprit</span>"
                  "<span><i style=\"background:#fff;border-color:#e8590c;border-style:dashed\"></i>flagged by the exploded compile</span>"
                  "<span><i style=\"background:#f1f3f5;border-color:#adb5bd;border-radius:6px\"></i>graph input</span>"
                  "<span><i style=\"background:#fff;border-color:#8c959f\"></i>other node</span></div>\n";
  s += fmt::format("<p class=\"caption\">Producers and consumers up to {} hop{} from the culprit, in layers by graph order. "
                   "Third line: the node's local error in ulp. Hover a node for its op, source line and module; an edge for its value.</p>\n",
                   hops, hops == 1 ? "" : "s");
  return s;
}

std::string dag_section(const DiffResult& r, const Program& program) {
  const Graph& g = program.ir.graph;
  std::string s = "<section id=\"neighbourhood\"><h2>Neighbourhood of the culprit</h2>\n";
  const std::set<NodeId> culprit = culprit_node_ids(g, *r.localization);
  if (culprit.empty()) return s + "<p class=\"muted\">No culprit node to draw.</p></section>\n";
  const Neighbourhood nb = neighbourhood(g, culprit);
  const DagLayout d = dag_layout(g, nb);
  const std::string svg = dag_svg_open(d, nb.hops) + dag_edges_svg(g, d, culprit) + dag_boxes_svg(r, program, d, culprit) + "</svg>\n";
  s += fmt::format("<div class=\"figure natural\">\n{}</div>\n", svg);
  s += dag_legend(nb.hops);
  return s + "</section>\n";
}

std::string probes_section(const Localization& l) {
  std::string s = "<section id=\"probes\"><h2>Probe log</h2>\n";
  s += "<p class=\"muted\">Each probe asks the compiler whether a region of the failing outputs' cone diverges "
       "(positions c1..cm in topological order).</p>\n";
  s += "<div class=\"table-scroll\"><table><thead><tr><th class=\"n\">#</th><th>phase</th><th>region</th><th>verdict</th><th>reason</th>"
       "<th>value</th><th>cost</th><th class=\"n\">seconds</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < l.probes.size(); ++i) {
    const Probe& p = l.probes[i];
    const std::string reason = p.failure ? failure_kind_name(*p.failure) : p.verdict.reason;
    s += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\" title=\"{}\">{}</td>"
                     "<td class=\"mono\">{}</td><td>{}</td><td class=\"n\">{:.3f}</td></tr>\n",
                     i + 1, esc(phase_name(p.phase)), esc(p.region), p.failure ? badge(false) : level_badge(p.verdict.level),
                     esc(p.verdict.detail), esc(reason), esc(p.value),
                     p.compiled ? "compiled" : "<span class=\"muted\">re-run / cached</span>", p.seconds);
  }
  return s + "</tbody></table></div>\n</section>\n";
}

std::string reproduce_block(const DiffResult& r, const HtmlOptions& o) {
  std::string s;
  const std::optional<Repro>& repro = r.localization ? r.localization->repro : std::nullopt;
  if (repro && repro->ok) {
    s += "<h3 style=\"margin-top:0\">Reproduce the culprit alone</h3>\n";
    s += fmt::format("<pre class=\"cmd\"><code>{}</code></pre>\n", esc(repro->command));
    s += fmt::format("<p class=\"muted\">Archive <code>{}</code>, inputs <code>{}</code>.</p>\n", esc(repro->archive), esc(repro->inputs));
    if (!repro->test.empty())
      s += fmt::format("<p>As a PyTorch unit test (fails while the bug is there): <a href=\"file://{0}\"><code>{0}</code></a></p>\n", esc(repro->test));
    if (!repro->artifacts.empty()) {
      s += "<p>The compiler's own files for the window (Inductor's debug trace of one compile of it):</p><ul>\n";
      for (const ReproArtifact& a : repro->artifacts)
        s += fmt::format("<li>{}: <a href=\"file://{}\"><code>{}</code></a></li>\n", esc(a.what), esc(a.path), esc(a.path));
      s += "</ul>\n";
    } else if (!repro->artifacts_message.empty()) {
      s += fmt::format("<p class=\"muted\">No compiler artifacts: {}</p>\n", esc(repro->artifacts_message));
    }
    if (!o.command.empty()) s += fmt::format("<p class=\"muted\">This report came from:</p><pre class=\"cmd\"><code>{}</code></pre>\n", esc(o.command));
    return s;
  }
  s += "<h3 style=\"margin-top:0\">Reproduce</h3>\n";
  if (!o.command.empty()) s += fmt::format("<pre class=\"cmd\"><code>{}</code></pre>\n", esc(o.command));
  else s += "<p class=\"muted\">The command line of this run was not recorded.</p>\n";
  if (repro && !repro->ok) s += fmt::format("<p class=\"muted\">The repro could not be written: {}</p>\n", esc(repro->message));
  else if (r.localization && r.localization->culprit.named())
    s += "<p class=\"muted\">Add <code>--repro DIR</code> to write the culprit as a standalone archive with its inputs and the command that reproduces it.</p>\n";
  return s;
}

std::string nodes_section(const DiffResult& r, const std::set<std::string>& culprit, const std::set<std::string>& suspects) {
  std::string s = "<section id=\"nodes\"><h2>Nodes</h2>\n";
  if (r.ranking.empty()) {
    s += "<p>No node introduces error: every local result is exact.</p>\n";
  } else {
    s += "<h3 style=\"margin-top:0\">Introducing the most error</h3>\n<p class=\"muted\">Local error: the node alone on fp64 inputs rounded to its dtypes, "
         "as RMSE relative to the RMS of its fp64 value (rel), compiled and eager side by side; sorted by their ratio, how many times "
         "farther from fp64 the compiled result is. Max ulp (of the working precision) for reference: near zero it is large by nature.</p>\n";
    s += "<div class=\"table-scroll\"><table><thead><tr><th class=\"n\">compiled rel</th><th class=\"n\">eager rel</th><th class=\"n\">ratio</th>"
         "<th class=\"n\">compiled ulp</th><th class=\"n\">eager ulp</th><th>node</th><th>op</th><th>source</th><th>module</th></tr></thead><tbody>\n";
    const std::string dash = "<td class=\"n muted\">&ndash;</td>";
    for (size_t i : r.ranking) {
      const NodeError& n = r.nodes[i];
      const bool compiled = n.compiled_local_relative >= 0;
      s += fmt::format("<tr{}>{}{}{}{}{}<td>{}</td><td class=\"mono\">{}</td><td class=\"mono brk\">{}</td><td class=\"mono\">{}</td></tr>\n",
                       culprit.count(n.name) ? " class=\"is-culprit\"" : "",
                       compiled ? num_cell(n.compiled_local_relative, num(n.compiled_local_relative)) : dash,
                       num_cell(n.local_relative, num(n.local_relative)),
                       compiled ? num_cell(n.compiled_vs_eager, fmt::format("{:.3g}&times;", n.compiled_vs_eager)) : dash,
                       n.compiled_local_ulp < 0 ? dash : num_cell(n.compiled_local_ulp, ulp(n.compiled_local_ulp)),
                       num_cell(n.local_ulp, ulp(n.local_ulp)), node_link(n.name), esc(n.target), esc(n.source), esc(n.module_path));
    }
    s += "</tbody></table></div>\n";
  }
  size_t rows = 0;
  for (const NodeError& n : r.nodes) rows += n.values.size();
  s += fmt::format("<details{}><summary>Every value, in graph order ({} nodes, {} values)</summary>\n", rows <= 60 ? " open" : "", r.nodes.size(), rows);
  s += "<div class=\"table-scroll\"><table class=\"per-node\"><thead><tr><th>value</th><th>op</th><th>dtype</th><th>shape</th>"
       "<th class=\"n\">comp ulp</th><th class=\"n\">local ulp</th><th class=\"n\">local rel</th><th class=\"n\">prop ulp</th><th class=\"n\">prop rel</th>"
       "<th class=\"n\">prop rmse</th></tr></thead><tbody>\n";
  const std::string dash = "<td class=\"n muted\">&ndash;</td>";
  for (const NodeError& n : r.nodes) {
    for (size_t k = 0; k < n.values.size(); ++k) {
      const ValueError& v = n.values[k];
      std::string cls = culprit.count(n.name) ? " class=\"is-culprit\"" : "";
      s += fmt::format("<tr{}{}>", k == 0 ? fmt::format(" id=\"{}\"", anchor(n.name)) : "", cls);
      std::string tags;
      if (culprit.count(n.name) && k == 0) tags += "<span class=\"tag\">culprit</span>";
      else if (suspects.count(n.name) && k == 0) tags += "<span class=\"tag\">exploded flagged</span>";
      s += fmt::format("<td class=\"mono\">{}{}</td><td class=\"mono\" title=\"{}\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td>", esc(v.name),
                       tags, esc(n.source + (n.module_path.empty() ? "" : "  [" + n.module_path + "]")), esc(n.target), esc(v.dtype), esc(v.shape));
      if (!v.compared) {
        s += "<td class=\"muted\" colspan=\"6\">not compared</td></tr>\n";
        continue;
      }
      if (v.local.exact_kind) {
        s += v.has_compiled_local ? fmt::format("<td class=\"n\">{} diff</td>", v.compiled_local.mismatches) : dash;
        s += fmt::format("<td class=\"n\">{} diff</td><td></td><td class=\"n\">{} diff</td><td></td><td></td></tr>\n", v.local.mismatches,
                         v.propagated.mismatches);
        continue;
      }
      s += v.has_compiled_local ? num_cell(v.compiled_local.max_ulp, ulp(v.compiled_local.max_ulp)) : dash;
      s += num_cell(v.local.max_ulp, ulp(v.local.max_ulp)) + num_cell(v.local.max_rel, num(v.local.max_rel)) +
           num_cell(v.propagated.max_ulp, ulp(v.propagated.max_ulp)) + num_cell(v.propagated.max_rel, num(v.propagated.max_rel)) +
           num_cell(v.propagated.rmse, num(v.propagated.rmse)) + "</tr>\n";
    }
  }
  s += "</tbody></table></div></details>\n";
  auto list = [&](const char* what, const std::vector<std::string>& items) {
    if (items.empty()) return;
    std::string joined;
    for (const std::string& i : items) joined += (joined.empty() ? "" : ", ") + ("<code>" + esc(i) + "</code>");
    s += fmt::format("<p><span class=\"muted\">{}:</span> {}</p>\n", what, joined);
  };
  list("fp64 fix-ups applied", r.fixups);
  list("random ops (native, fp64 and local runs draw the same stream)", r.random_nodes);
  list("not comparable in fp64 (bitcasts, float8)", r.not_comparable);
  return s + "</section>\n";
}

}  // namespace

std::string to_html(const DiffResult& r, const HtmlOptions& o) {
  bool graph_failed = false;
  for (const CompileRecord& c : r.compiles) graph_failed = graph_failed || (c.what == "graph" && !c.ok);
  std::set<std::string> culprit, suspects;
  if (r.localization) {
    culprit.insert(r.localization->culprit.nodes.begin(), r.localization->culprit.nodes.end());
    suspects.insert(r.localization->exploded_suspects.begin(), r.localization->exploded_suspects.end());
  }
  const std::string verdict = wording::verdict(r).word;
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += fmt::format("<title>pt2diff: {} &middot; {}</title>\n<style>{}</style>\n</head>\n<body>\n", verdict, esc(r.graph), kCss);
  h += header(r, o, graph_failed, r.localization.has_value());
  h += "<main class=\"wrap\">\n";
  h += outputs_section(r);
  h += node_verdict_section(r);
  const std::string reproduce = reproduce_block(r, o);
  if (r.localization) {
    h += culprit_section(*r.localization, reproduce);
    h += hints_section(*r.localization);
  }
  if (r.workaround && r.workaround->conclusion != Workaround::Conclusion::NotNeeded) h += workaround_section(*r.workaround);
  if (r.compiler_search) h += compiler_search_section(*r.compiler_search);
  h += profile_section(r, culprit);
  if (r.localization) {
    if (o.program) h += dag_section(r, *o.program);
    h += probes_section(*r.localization);
  }
  if (!r.localization) h += "<section id=\"reproduce\">" + reproduce + "</section>\n";
  h += nodes_section(r, culprit, suspects);
  h += fmt::format("</main>\n<footer class=\"wrap\">pt2diff &middot; {} &middot; {} nodes in {:.2f} s</footer>\n</body>\n</html>\n", verdict,
                   r.nodes.size(), r.seconds);
  return h;
}

}  // namespace pt2diff
