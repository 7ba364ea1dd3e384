// engine/report/sizes_report.cpp — a size sweep (pt2diff/sizes.h) as text, CSV, JSON (docs/sizes.schema.json)
// and one HTML page with its plot.
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "engine/report/svg_plot.h"
#include "pt2diff/localize.h"
#include "pt2diff/sizes.h"

namespace pt2diff {

namespace {

using nlohmann::json;

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

json json_number(double v) { return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity"); }

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

std::string sizes_to_json(const SizeSweepResult& s) {
  json points = json::array();
  for (const SizePoint& p : s.points)
    points.push_back({{"symbol", p.symbol}, {"size", p.size}, {"judged", p.judged}, {"refused", p.refused},
                      {"level", p.judged ? level_name(p.level) : "refused"}, {"fails", p.fails}, {"compiled_failed", p.compiled_failed},
                      {"worst_ratio", json_number(p.worst_ratio)}, {"worst_output", p.worst_output}, {"node_ratio", json_number(p.node_ratio)},
                      {"node", p.node}, {"culprit", p.culprit}, {"recompiles", p.recompiles}, {"seconds", p.seconds}});
  json localized = json::array();
  for (const DiffResult& r : s.localized) localized.push_back(json::parse(to_json(r)));
  json j = {{"schema_version", 1},
            {"graph", s.graph},
            {"inputs", s.inputs},
            {"symbols", s.symbols},
            {"described", s.described},
            {"refused_dims", s.refused_dims},
            {"shapes", s.shapes ? json::parse(shapes_to_json(*s.shapes)) : json(nullptr)},
            {"points", points},
            {"localized", localized},
            {"static_check", s.static_check ? json{{"symbol", s.static_check->symbol}, {"size", s.static_check->size},
                                                   {"dynamic_level", level_name(s.static_check->dynamic_level)},
                                                   {"static_level", level_name(s.static_check->static_level)},
                                                   {"dynamic_ratio", json_number(s.static_check->dynamic_ratio)},
                                                   {"static_ratio", json_number(s.static_check->static_ratio)},
                                                   {"dynamic_node_ratio", json_number(s.static_check->dynamic_node_ratio)},
                                                   {"static_node_ratio", json_number(s.static_check->static_node_ratio)},
                                                   {"differ", s.static_check->differ}, {"summary", s.static_check->summary}}
                                             : json(nullptr)},
            {"compiles", s.compiles},
            {"recompiles", s.recompiles},
            {"seconds", s.seconds}};
  return j.dump(2) + "\n";
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
