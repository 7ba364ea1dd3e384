// engine/report/sweep_report.cpp — a sweep as a terminal table, CSV, JSON (docs/sweep.schema.json)
// and an SVG plot.
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "engine/report/svg_plot.h"
#include "pt2diff/sweep.h"

namespace pt2diff {

namespace {

using nlohmann::json;

std::string multiplier_label(double m) { return m > 0 ? fmt::format("{:g}", m) : "rule"; }

std::string tol_label(const std::optional<double>& t) { return t ? fmt::format("{:.3g}", *t) : "none up to 1e3"; }

/// CSV field: quoted when it holds a comma, quote or newline.
std::string csv(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string culprit_label(const SweepPoint& p) {
  if (!p.localization) return "";
  const Culprit& c = p.localization->culprit;
  return fmt::format("{} {}", culprit_kind_name(c.kind), fmt::join(c.nodes, "+"));
}

}  // namespace

std::string sweep_to_text(const SweepResult& s) {
  const DiffResult& r = s.run;
  std::string out = fmt::format("{} with {}: compiled = {}, rule = {}; {} points, {} compile{}\n\n", r.graph, r.inputs, r.compiled,
                                rule_name(r.rule), s.points.size(), s.compiles, s.compiles == 1 ? "" : "s");
  // One column per output (P/F), then the counts.
  std::string header = fmt::format("  {:>10} {:>5} ", "tol", "mult");
  for (size_t i = 0; i < r.outputs.size(); ++i) header += fmt::format(" {:>4}", fmt::format("o{}", i));
  header += fmt::format("  {:>10} {:>10}  {}\n", "local fail", "prop fail", "first diverging");
  out += header;
  for (const SweepPoint& p : s.points) {
    std::string row = fmt::format("  {:>10.3g} {:>5} ", p.tol, multiplier_label(p.multiplier));
    for (const Verdict& v : p.outputs)
      row += fmt::format(" {:>4}", v.level == Level::Pass ? "pass" : v.level == Level::Suspicious ? "SUSP" : "FAIL");
    row += fmt::format("  {:>10} {:>10}  {}", p.local_failures, p.propagated_failures, p.first_diverging.empty() ? "-" : p.first_diverging);
    if (p.localization) row += fmt::format("  [localized: {}]", culprit_label(p));
    out += row + "\n";
  }
  out += fmt::format("(SUSP: suspicious, the rule passes but compiled is {:g}x or more farther from fp64 than eager)\n",
                     r.rule.suspicious_ratio);
  // The node verdict does not depend on the tolerance: one line for the whole sweep.
  const NodeVerdict& nv = r.node_verdict;
  if (nv.available && !nv.findings.empty()) {
    const NodeFinding& f = nv.findings.front();
    out += fmt::format("node verdict ({} at every point, whatever the tolerance): {} ({}) at {} eager's local error on fp64-exact inputs{}{}\n",
                       level_name(nv.level), f.node, f.op, fmt::format("{:.3g}x", f.ratio), f.also.empty() ? "" : fmt::format("; also {}", fmt::join(f.also, ", ")),
                       nv.findings.size() > 1 ? fmt::format("; {} more findings in --json", nv.findings.size() - 1) : "");
  } else if (nv.available) {
    out += fmt::format("node verdict: pass at every point (worst node {} at {:.3g}x eager's local error; --node-ratio {:g})\n", nv.worst_node,
                       nv.worst_ratio, r.rule.node_ratio);
  }
  out += "\noutputs (o#) and the smallest tolerance at which each passes";
  out += s.multipliers.size() > 1 ? fmt::format(" (multiplier {}):\n", fmt::join(s.multipliers, " / ")) : ":\n";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    std::vector<std::string> tols;
    for (const auto& t : s.min_passing_tol[i]) tols.push_back(tol_label(t));
    out += fmt::format("  o{:<3} {:<24} {}\n", i, r.outputs[i].name, fmt::join(tols, " / "));
  }
  out += fmt::format("\none set of runs {:.2f} s, judging {} points {:.3f} s{}\n", s.run_seconds, s.points.size(), s.judge_seconds,
                     s.localize_seconds > 0 ? fmt::format(", localization {:.2f} s", s.localize_seconds) : "");
  return out;
}

/// The node verdict of the sweep's one set of runs (the same at every point): its level and findings.
static nlohmann::json node_verdict_summary(const NodeVerdict& nv) {
  nlohmann::json findings = nlohmann::json::array();
  for (const NodeFinding& f : nv.findings)
    findings.push_back({{"node", f.node}, {"op", f.op}, {"source", f.source}, {"module_path", f.module_path}, {"level", level_name(f.level)},
                        {"ratio", std::isinf(f.ratio) ? nlohmann::json("Infinity") : nlohmann::json(f.ratio)}, {"also", f.also}});
  return {{"available", nv.available}, {"level", level_name(nv.level)}, {"worst_ratio", std::isinf(nv.worst_ratio) ? nlohmann::json("Infinity") : nlohmann::json(nv.worst_ratio)},
          {"worst_node", nv.worst_node}, {"findings", std::move(findings)}};
}

std::string sweep_to_csv(const SweepResult& s) {
  std::string out = "tol,multiplier,output,pass,reason,local_failures,propagated_failures,first_diverging,culprit,level\n";
  for (const SweepPoint& p : s.points)
    for (size_t i = 0; i < p.outputs.size(); ++i)
      out += fmt::format("{:.6g},{},{},{},{},{},{},{},{},{}\n", p.tol, multiplier_label(p.multiplier), csv(s.run.outputs[i].name),
                         p.outputs[i].pass ? 1 : 0, p.outputs[i].reason, p.local_failures, p.propagated_failures,
                         csv(p.first_diverging), csv(culprit_label(p)), level_name(p.outputs[i].level));
  return out;
}

std::string sweep_to_json(const SweepResult& s) {
  json points = json::array();
  for (const SweepPoint& p : s.points) {
    json outputs = json::array();
    for (const Verdict& v : p.outputs)
      outputs.push_back({{"pass", v.pass}, {"level", level_name(v.level)}, {"reason", v.reason}, {"detail", v.detail},
                         {"error_ratio", std::isfinite(v.error_ratio) ? json(v.error_ratio) : json("Infinity")},
                         {"blind_spot", v.blind_spot.empty() ? json(nullptr) : json(v.blind_spot)}});
    json jp = {{"tol", p.tol},
               {"multiplier", p.multiplier > 0 ? json(p.multiplier) : json(nullptr)},
               {"outputs", outputs},
               {"failing_outputs", p.failing_outputs},
               {"suspicious_outputs", p.suspicious_outputs},
               {"local_failures", p.local_failures},
               {"propagated_failures", p.propagated_failures},
               {"first_diverging", p.first_diverging.empty() ? json(nullptr) : json(p.first_diverging)}};
    if (p.localization) {
      const Culprit& c = p.localization->culprit;
      jp["localization"] = {{"kind", culprit_kind_name(c.kind)}, {"conclusion", culprit_conclusion_name(c.conclusion)}, {"nodes", c.nodes}, {"ops", c.ops},
                            {"summary", c.summary}, {"compiles", p.localization->compiles}};
    }
    points.push_back(jp);
  }
  json outputs = json::array();
  for (size_t i = 0; i < s.run.outputs.size(); ++i) {
    json min_tol = json::array();
    for (const auto& t : s.min_passing_tol[i]) min_tol.push_back(t ? json(*t) : json(nullptr));
    outputs.push_back({{"name", s.run.outputs[i].name}, {"min_passing_tol", min_tol}});
  }
  json multipliers = json::array();
  for (double m : s.multipliers) multipliers.push_back(m > 0 ? json(m) : json(nullptr));
  json j = {{"graph", s.run.graph},       {"inputs", s.run.inputs},     {"compiled", s.run.compiled},
            {"rule", rule_name(s.run.rule)}, {"suspicious_ratio", s.run.rule.suspicious_ratio}, {"multipliers", multipliers}, {"outputs", outputs},
            {"node_verdict", node_verdict_summary(s.run.node_verdict)},
            {"points", points},           {"compiles", s.compiles},     {"run_seconds", s.run_seconds},
            {"judge_seconds", s.judge_seconds}, {"localize_seconds", s.localize_seconds}};
  return j.dump(1) + "\n";
}

std::string sweep_to_svg(const SweepResult& s) {
  static const char* colors[] = {"#c0392b", "#2471a3", "#1e8449", "#7d3c98", "#b9770e", "#5d6d7e"};
  std::vector<PlotSeries> series;
  size_t color = 0;
  for (double m : s.multipliers) {
    const std::string suffix = s.multipliers.size() > 1 ? fmt::format(" (mult {})", multiplier_label(m)) : "";
    PlotSeries outputs{"failing outputs" + suffix, colors[color++ % 6], {}, false, true};
    PlotSeries local{"nodes failing (compiled local)" + suffix, colors[color++ % 6], {}, false, true};
    PlotSeries propagated{"nodes drifted (eager propagated)" + suffix, colors[color++ % 6], {}, true, true};
    for (const SweepPoint& p : s.points) {
      if (p.multiplier != m) continue;
      outputs.points.emplace_back(p.tol, static_cast<double>(p.failing_outputs));
      local.points.emplace_back(p.tol, static_cast<double>(p.local_failures));
      propagated.points.emplace_back(p.tol, static_cast<double>(p.propagated_failures));
    }
    series.push_back(std::move(outputs));
    series.push_back(std::move(local));
    series.push_back(std::move(propagated));
  }
  PlotOptions o;
  o.title = fmt::format("{}: what fails at each tolerance (rule {})", s.run.graph, rule_name(s.run.rule));
  o.x_label = "tolerance (atol = rtol)";
  o.y_label = "count";
  o.log_x = true;
  o.id = "sweep";
  for (size_t i = 0; i < s.run.outputs.size(); ++i)
    if (const auto& t = s.min_passing_tol[i].front(); t && *t > 0)
      o.v_lines.push_back({fmt::format("{} passes from {:.3g}", s.run.outputs[i].name, *t), *t, "#555"});
  return svg_line_plot(series, o);
}

}  // namespace pt2diff
