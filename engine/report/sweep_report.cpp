// engine/report/sweep_report.cpp — a sweep as a terminal table, CSV, JSON (docs/sweep.schema.json)
// and an SVG plot.
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "graphs/json_fields.h"
#include "engine/report/svg_plot.h"
#include "pt2diff/sweep.h"

namespace pt2diff {

namespace {

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

std::string sweep_to_csv(const SweepResult& s) {
  std::string out = "tol,multiplier,output,pass,reason,local_failures,propagated_failures,first_diverging,culprit,level\n";
  for (const SweepPoint& p : s.points)
    for (size_t i = 0; i < p.outputs.size(); ++i)
      out += fmt::format("{:.6g},{},{},{},{},{},{},{},{},{}\n", p.tol, multiplier_label(p.multiplier), csv(s.run.outputs[i].name),
                         p.outputs[i].pass ? 1 : 0, p.outputs[i].reason, p.local_failures, p.propagated_failures,
                         csv(p.first_diverging), csv(culprit_label(p)), level_name(p.outputs[i].level));
  return out;
}

}  // namespace pt2diff

namespace pt2diff::json_fields {

/// One output's verdict at one point.
struct SweepVerdict {
  const Verdict& verdict;
};

Object<SweepVerdict> describe(Tag<SweepVerdict>) {
  using F = Fields<SweepVerdict>;
  const Verdict& (*v)(const SweepVerdict&) = [](const SweepVerdict& s) -> const Verdict& { return s.verdict; };
  return Object<SweepVerdict>("",
                              {F::of("pass", v, &Verdict::pass),
                               F::computed(
                                   "level", [v](const SweepVerdict& s) { return std::string(level_name(v(s).level)); },
                                   names_of(level_name, {Level::Pass, Level::Suspicious, Level::Fail})),
                               F::of("reason", v, &Verdict::reason), F::of("detail", v, &Verdict::detail),
                               F::of("error_ratio", v, &Verdict::error_ratio,
                                     "RMSE(compiled, fp64) / max(RMSE(eager, fp64), eager's rounding floor)"),
                               F::computed(
                                   "blind_spot",
                                   [v](const SweepVerdict& s) {
                                     return v(s).blind_spot.empty() ? std::optional<std::string>() : v(s).blind_spot;
                                   },
                                   one_of({"atol_dominates", "rmse_slack_dominates"}).or_null(),
                                   "why the rule cannot see a 1% error in this output (docs/verdicts.md)")});
}

/// Wrappers of each element, for a list of values a document shows in short.
template <class Wrapper, class T>
std::vector<Wrapper> wrapped(const std::vector<T>& all) {
  std::vector<Wrapper> out;
  for (const T& v : all) out.push_back(Wrapper{v});
  return out;
}

/// A point's localization, in short: the culprit and what it cost.
struct SweepCulprit {
  const Localization& localization;
};

Object<SweepCulprit> describe(Tag<SweepCulprit>) {
  using F = Fields<SweepCulprit>;
  using C = Culprit::Conclusion;
  const Culprit& (*culprit)(const SweepCulprit&) = [](const SweepCulprit& c) -> const Culprit& {
    return c.localization.culprit;
  };
  return Object<SweepCulprit>(
      "", {F::computed(
               "kind", [culprit](const SweepCulprit& c) { return std::string(culprit_kind_name(culprit(c).kind)); },
               names_of(culprit_kind_name, {Culprit::Kind::SingleOp, Culprit::Kind::Window, Culprit::Kind::Flaky,
                                            Culprit::Kind::Inconclusive, Culprit::Kind::CompilerDecision})),
           F::computed(
               "conclusion",
               [culprit](const SweepCulprit& c) { return std::string(culprit_conclusion_name(culprit(c).conclusion)); },
               names_upto(culprit_conclusion_name, C::CompilerDecision)),
           F::of("nodes", culprit, &Culprit::nodes), F::of("ops", culprit, &Culprit::ops),
           F::of("summary", culprit, &Culprit::summary),
           F::computed("compiles", [](const SweepCulprit& c) { return c.localization.compiles; })});
}

Object<SweepPoint> describe(Tag<SweepPoint>) {
  using F = Fields<SweepPoint>;
  return Object<SweepPoint>(
      "",
      {F::of("tol", &SweepPoint::tol, Type{{{"type", "number"}, {"exclusiveMinimum", 0}}}),
       F::computed(
           "multiplier",
           [](const SweepPoint& p) { return p.multiplier > 0 ? std::optional<double>(p.multiplier) : std::nullopt; },
           finite_type().or_null()),
       F::computed(
           "outputs", [](const SweepPoint& p) { return wrapped<SweepVerdict>(p.outputs); },
           "one verdict per output, in the order of the top-level 'outputs'"),
       F::of("failing_outputs", &SweepPoint::failing_outputs),
       F::of("suspicious_outputs", &SweepPoint::suspicious_outputs,
             "outputs the rule passes whose level is suspicious"),
       F::of("local_failures", &SweepPoint::local_failures, "nodes whose compiled local result fails the rule"),
       F::of("propagated_failures", &SweepPoint::propagated_failures,
             "nodes whose eager value is not allclose to fp64 at tol"),
       F::computed("first_diverging",
                   [](const SweepPoint& p) {
                     return p.first_diverging.empty() ? std::optional<std::string>() : p.first_diverging;
                   }),
       F::computed(
           "localization", [](const SweepPoint& p) { return write_value(SweepCulprit{*p.localization}); },
           object_of<SweepCulprit>().type(), "where an output fails, with --localize")
           .only_when([](const SweepPoint& p) { return p.localization.has_value(); })});
}

/// A finding of the run's node verdict, in short.
struct SweepFinding {
  const NodeFinding& finding;
};

Object<SweepFinding> describe(Tag<SweepFinding>) {
  using F = Fields<SweepFinding>;
  const NodeFinding& (*f)(const SweepFinding&) = [](const SweepFinding& s) -> const NodeFinding& { return s.finding; };
  return Object<SweepFinding>(
      "", {F::of("node", f, &NodeFinding::node), F::of("op", f, &NodeFinding::op),
           F::of("source", f, &NodeFinding::source), F::of("module_path", f, &NodeFinding::module_path),
           F::computed(
               "level", [f](const SweepFinding& s) { return std::string(level_name(f(s).level)); },
               names_of(level_name, {Level::Suspicious, Level::Fail})),
           F::of("ratio", f, &NodeFinding::ratio), F::of("also", f, &NodeFinding::also)});
}

/// The run's node verdict, in short.
struct SweepNodeVerdict {
  const NodeVerdict& verdict;
};

Object<SweepNodeVerdict> describe(Tag<SweepNodeVerdict>) {
  using F = Fields<SweepNodeVerdict>;
  const NodeVerdict& (*v)(const SweepNodeVerdict&) = [](const SweepNodeVerdict& s) -> const NodeVerdict& {
    return s.verdict;
  };
  return Object<SweepNodeVerdict>(
      "",
      {F::of("available", v, &NodeVerdict::available),
       F::computed(
           "level", [v](const SweepNodeVerdict& s) { return std::string(level_name(v(s).level)); },
           names_of(level_name, {Level::Pass, Level::Suspicious, Level::Fail})),
       F::of("worst_ratio", v, &NodeVerdict::worst_ratio), F::of("worst_node", v, &NodeVerdict::worst_node),
       F::computed("findings", [v](const SweepNodeVerdict& s) { return wrapped<SweepFinding>(v(s).findings); })},
      "the run's node verdict (docs/verdicts.md, 'Node evidence'), the same at every point: nodes whose compiled local "
      "error stands out against eager's");
}

/// An output with the smallest tolerance that passes it, per multiplier.
struct SweepOutput {
  std::string name;
  std::vector<std::optional<double>> min_passing_tol;
};

Object<SweepOutput> describe(Tag<SweepOutput>) {
  using F = Fields<SweepOutput>;
  return Object<SweepOutput>(
      "",
      {F::of("name", &SweepOutput::name),
       F::of("min_passing_tol", &SweepOutput::min_passing_tol, array_type(finite_type().or_null()),
             "per multiplier (same order as 'multipliers'): the smallest tolerance that passes, to 0.1%; null: none "
             "up to 1e3")});
}

Object<SweepResult> describe(Tag<SweepResult>) {
  using F = Fields<SweepResult>;
  const DiffResult& (*run)(const SweepResult&) = [](const SweepResult& s) -> const DiffResult& { return s.run; };
  return Object<SweepResult>(
      "",
      {F::of("graph", run, &DiffResult::graph), F::of("inputs", run, &DiffResult::inputs),
       F::of("compiled", run, &DiffResult::compiled, "the compiled side, as the backend names itself"),
       F::computed(
           "rule", [](const SweepResult& s) { return rule_name(s.run.rule); }, one_of({"same", "allclose"})),
       F::computed(
           "suspicious_ratio", [](const SweepResult& s) { return s.run.rule.suspicious_ratio; }, finite_type(),
           "--suspicious-ratio: a passing output this many times farther from fp64 than eager is suspicious (0: "
           "never)")
           .at_least(0),
       F::computed(
           "multipliers",
           [](const SweepResult& s) {
             std::vector<std::optional<double>> out;
             for (double m : s.multipliers) out.push_back(m > 0 ? std::optional<double>(m) : std::nullopt);
             return out;
           },
           Type{{{"type", "array"}, {"minItems", 1}, {"items", finite_type().or_null().schema}}},
           "the multiplier axis; null: the rule's own multipliers"),
       F::computed("outputs",
                   [](const SweepResult& s) {
                     std::vector<SweepOutput> out;
                     for (size_t i = 0; i < s.run.outputs.size(); ++i)
                       out.push_back({s.run.outputs[i].name, s.min_passing_tol[i]});
                     return out;
                   }),
       F::computed("node_verdict", [](const SweepResult& s) { return SweepNodeVerdict{s.run.node_verdict}; }),
       F::of("points", &SweepResult::points), F::of("compiles", &SweepResult::compiles),
       F::of("run_seconds", &SweepResult::run_seconds, finite_type()),
       F::of("judge_seconds", &SweepResult::judge_seconds, finite_type()),
       F::of("localize_seconds", &SweepResult::localize_seconds, finite_type())},
      "One set of runs judged at every point of a tolerance grid (docs/usage.md, 'Tolerance sweeps').");
}

}  // namespace pt2diff::json_fields

namespace pt2diff {

std::string sweep_to_json(const SweepResult& s) { return json_fields::write_value(s).dump(1) + "\n"; }

std::string sweep_json_schema() {
  return json_fields::document_schema("pt2diff sweep --json", json_fields::object_of<SweepResult>()).dump(2) + "\n";
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
