// engine/report/sizes_report.cpp — a size sweep (pt2diff/sizes.h) as text, CSV, JSON (docs/sizes.schema.json)
// and one HTML page with its plot.
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "engine/report/report_fields.h"
#include "engine/report/svg_plot.h"
#include "pt2diff/localize.h"
#include "pt2diff/sizes.h"

namespace pt2diff {

namespace {

std::string ratio_text(double v) { return std::isinf(v) ? "inf" : v >= 100 ? fmt::format("{:.0f}x", v) : fmt::format("{:.3g}x", v); }

std::string verdict_text(const SizePoint& p) {
  if (!p.judged) return "REFUSED";
  if (p.compiled_failed) return "COMPILER FAILED";
  std::string level = level_name(p.level);
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return level;
}

/// "3 of 15 sizes fail (smallest 3), 1 refused".
std::string tally(const SizeSweepResult& s, const std::string& symbol) {
  size_t judged = 0, fails = 0, refused = 0;
  std::optional<int64_t> smallest;
  for (const SizePoint& p : s.points) {
    if (p.symbol != symbol) continue;
    if (!p.judged) {
      ++refused;
      continue;
    }
    ++judged;
    if (p.fails) {
      ++fails;
      if (!smallest) smallest = p.size;
    }
  }
  std::string out = fmt::format("{} of {} size{} judged fail{}", fails, judged, judged == 1 ? "" : "s",
                                smallest ? fmt::format(" (smallest {})", *smallest) : "");
  if (refused) out += fmt::format(", {} refused", refused);
  return out;
}


}  // namespace

std::string sizes_to_text(const SizeSweepResult& s) {
  std::string out = fmt::format("{} with {}: sizes of {}\n", s.graph, s.inputs, fmt::join(s.described, ", "));
  if (s.shapes) out += fmt::format("compiled {}\n", shapes_line(*s.shapes));
  for (const std::string& why : s.refused_dims) out += fmt::format("not swept: {}\n", why);
  std::string symbol;
  for (const SizePoint& p : s.points) {
    if (p.symbol != symbol) {
      symbol = p.symbol;
      out += fmt::format("\n  {:>7}  {:<16} {:>9}  {:<22} {:>9}  {:<22} {:>10} {:>8}\n", symbol, "verdict", "output", "(worst ratio)", "node",
                         "(node verdict)", "recompiles", "seconds");
    }
    if (!p.judged) {
      out += fmt::format("  {:>7}  {:<16} {}\n", p.size, verdict_text(p), p.refused);
      continue;
    }
    out += fmt::format("  {:>7}  {:<16} {:>9}  {:<22} {:>9}  {:<22} {:>10} {:>8.2f}{}\n", p.size, verdict_text(p), ratio_text(p.worst_ratio),
                       p.worst_output, ratio_text(p.node_ratio), p.node, p.recompiles, p.seconds,
                       p.culprit.empty() ? "" : "  culprit: " + p.culprit);
  }
  for (const std::string& sym : s.symbols) out += fmt::format("\n{}: {}", sym, tally(s, sym));
  out += "\n";
  if (s.static_check) out += fmt::format("\nstatic against dynamic: {}\n", s.static_check->summary);
  for (const DiffResult& r : s.localized) out += fmt::format("\nat the smallest failing size ({}):\n{}", r.inputs, to_summary(r));
  out += fmt::format("\n{} compile{} for the whole sweep ({} recompile{} at the sizes run), {:.2f} s\n", s.compiles,
                     s.compiles == 1 ? "" : "s", s.recompiles, s.recompiles == 1 ? "" : "s", s.seconds);
  return out;
}

std::string sizes_to_csv(const SizeSweepResult& s) {
  auto quoted = [](std::string v) {
    std::string out = "\"";
    for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out = "symbol,size,judged,level,fails,worst_ratio,worst_output,node_ratio,node,culprit,recompiles,seconds,refused\n";
  for (const SizePoint& p : s.points)
    out += fmt::format("{},{},{},{},{},{:.6g},{},{:.6g},{},{},{},{:.3f},{}\n", p.symbol, p.size, p.judged ? 1 : 0,
                       p.judged ? level_name(p.level) : "refused", p.fails ? 1 : 0, p.worst_ratio, quoted(p.worst_output), p.node_ratio,
                       quoted(p.node), quoted(p.culprit), p.recompiles, p.seconds, quoted(p.refused));
  return out;
}

}  // namespace pt2diff

namespace pt2diff::json_fields {

Object<SizePoint> describe(Tag<SizePoint>) {
  using F = Fields<SizePoint>;
  return Object<SizePoint>(
      "",
      {F::of("symbol", &SizePoint::symbol), F::of("size", &SizePoint::size).at_least(0),
       F::of("judged", &SizePoint::judged),
       F::of("refused", &SizePoint::refused,
             "when not judged: one line (outside the exported range, over --max-memory)"),
       F::computed(
           "level", [](const SizePoint& p) { return std::string(p.judged ? level_name(p.level) : "refused"); },
           one_of({"pass", "suspicious", "fail", "refused"})),
       F::of("fails", &SizePoint::fails, "the run at this size counts as failing (exit 1)"),
       F::of("compiled_failed", &SizePoint::compiled_failed),
       F::of("worst_ratio", &SizePoint::worst_ratio, "the largest output error ratio: compiled RMSE to fp64 / eager's"),
       F::of("worst_output", &SizePoint::worst_output),
       F::of("node_ratio", &SizePoint::node_ratio,
             "the node verdict's worst ratio (the exploded compile against eager, fp64-exact inputs)"),
       F::of("node", &SizePoint::node, "the node verdict's first finding, else its worst node"),
       F::of("culprit", &SizePoint::culprit,
             "the localization's culprit nodes, at the smallest failing size of the symbol"),
       F::of("recompiles", &SizePoint::recompiles, "compiles this size caused past the first (a guard failed)")
           .at_least(0),
       F::of("seconds", &SizePoint::seconds, finite_type())});
}

Object<StaticCheck> describe(Tag<StaticCheck>) {
  using F = Fields<StaticCheck>;
  auto level = [](const char* name, Level StaticCheck::* member) {
    return F::computed(
        name, [member](const StaticCheck& c) { return std::string(level_name(c.*member)); },
        names_of(level_name, {Level::Pass, Level::Suspicious, Level::Fail}));
  };
  return Object<StaticCheck>(
      "", {F::of("symbol", &StaticCheck::symbol), F::of("size", &StaticCheck::size),
           level("dynamic_level", &StaticCheck::dynamic_level), level("static_level", &StaticCheck::static_level),
           F::of("dynamic_ratio", &StaticCheck::dynamic_ratio), F::of("static_ratio", &StaticCheck::static_ratio),
           F::of("dynamic_node_ratio", &StaticCheck::dynamic_node_ratio),
           F::of("static_node_ratio", &StaticCheck::static_node_ratio),
           F::of("differ", &StaticCheck::differ, "the levels differ: one compile is wrong where the other is not"),
           F::of("summary", &StaticCheck::summary)});
}

Object<SizeSweepResult> describe(Tag<SizeSweepResult>) {
  using F = Fields<SizeSweepResult>;
  return Object<SizeSweepResult>(
      "",
      {F::computed(
           "schema_version", [](const SizeSweepResult&) { return 1; }, Type{{{"const", 1}}}),
       F::of("graph", &SizeSweepResult::graph),
       F::of("inputs", &SizeSweepResult::inputs,
             "where the base inputs came from; each size cuts or repeats them along the swept dim"),
       F::of("symbols", &SizeSweepResult::symbols, "the archive's symbols swept, in order"),
       F::of("described", &SizeSweepResult::described,
             "per symbol: the input dim and the exported range ('x.size(0) in [2, 64]')"),
       F::of("refused_dims", &SizeSweepResult::refused_dims, "dims asked for that cannot be swept, one line each"),
       F::of("shapes", &SizeSweepResult::shapes,
             "how the first compile of the whole graph treated the dynamic dims; null when the backend does not say"),
       F::of("points", &SizeSweepResult::points),
       F::of("localized", &SizeSweepResult::localized, array_type(Type{{{"type", "object"}}}),
             "the run at each symbol's smallest failing size, localized: each a report of docs/report.schema.json"),
       F::of("static_check", &SizeSweepResult::static_check,
             "the graph compiled static too at one size (the smallest failing, else suspicious, else the given size) "
             "and judged beside the dynamic compile"),
       F::of("compiles", &SizeSweepResult::compiles,
             "compiles the sweep's backend made: each region once, every size sharing it"),
       F::of("recompiles", &SizeSweepResult::recompiles).at_least(0),
       F::of("seconds", &SizeSweepResult::seconds, finite_type())},
      "What `pt2diff sizes --json` writes and pt2diff.sweep_sizes() returns (docs/dynamic-shapes.md): one dynamic "
      "compile judged at every size of the graph's dynamic dims.");
}

}  // namespace pt2diff::json_fields

namespace pt2diff {

std::string sizes_to_json(const SizeSweepResult& s) { return json_fields::write_value(s).dump(2) + "\n"; }

std::string sizes_json_schema() {
  return json_fields::document_schema("pt2diff size sweep", json_fields::object_of<SizeSweepResult>()).dump(2) + "\n";
}

std::string sizes_to_html(const SizeSweepResult& s) {
  std::string body;
  for (size_t k = 0; k < s.symbols.size(); ++k) {
    const std::string& sym = s.symbols[k];
    PlotSeries worst{"worst output ratio", "#1f77b4", {}, false, true, {}};
    PlotSeries node{"node verdict's worst ratio", "#ff7f0e", {}, true, true, {}};
    PlotSeries failing{"failing size", "#d62728", {}, false, true, {}};
    for (const SizePoint& p : s.points) {
      if (p.symbol != sym || !p.judged) continue;
      worst.points.push_back({static_cast<double>(p.size), std::max(p.worst_ratio, 1e-3)});
      worst.point_titles.push_back(fmt::format("{}={}: {} {}", sym, p.size, verdict_text(p), p.worst_output));
      node.points.push_back({static_cast<double>(p.size), std::max(p.node_ratio, 1e-3)});
      node.point_titles.push_back(fmt::format("{}={}: {}", sym, p.size, p.node));
      if (p.fails) {
        failing.points.push_back({static_cast<double>(p.size), std::max(p.worst_ratio, 1e-3)});
        failing.point_titles.push_back(fmt::format("{}={} fails{}", sym, p.size, p.culprit.empty() ? "" : ": culprit " + p.culprit));
      }
    }
    PlotOptions o;
    o.title = fmt::format("{} ({}): compiled error against eager's, per size", sym, s.described[k]);
    o.x_label = sym;
    o.y_label = "ratio";
    o.log_x = true;
    o.log_y = true;
    o.id = "sizes-" + sym;
    o.h_lines.push_back({"1x (eager's error)", 1.0});
    body += svg_line_plot({worst, node, failing}, o);
    body += fmt::format("<p>{}</p>\n", html_escape(tally(s, sym)));
  }
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>pt2diff sizes: " + html_escape(s.graph) +
         "</title><style>body{font-family:sans-serif;margin:2em}svg{max-width:100%;height:auto}pre{background:#f6f6f6;padding:1em}"
         "</style></head><body>\n<h1>pt2diff sizes</h1>\n" + body + "<pre>" + html_escape(sizes_to_text(s)) + "</pre>\n</body></html>\n";
}

}  // namespace pt2diff
