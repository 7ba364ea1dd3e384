// engine/report/recheck_report.cpp — a recheck over torch installations (pt2diff/recheck.h) as a table for the
// terminal and as JSON (docs/recheck.schema.json).
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pt2diff/recheck.h"

namespace pt2diff {

namespace {

using nlohmann::json;

std::string recheck_ratio(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.3g}x", v); }

json recheck_number(double v) { return std::isfinite(v) ? json(v) : json(std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity"); }

std::string row_name(const TorchRow& r) { return r.torch.label.empty() ? (r.version.empty() ? r.torch.python : r.version) : r.torch.label; }

std::string row_verdict(const TorchRow& r) {
  if (r.skipped) return "not run";
  if (!r.judged) return "UNUSABLE";
  if (r.compiled_failed) return "COMPILER FAILED";
  std::string level = level_name(r.level);
  for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return level;
}

}  // namespace

std::string recheck_to_text(const RecheckResult& r) {
  std::string out = fmt::format("{} with {}: the compiled side from each torch below, judged against one fp64 reference\n\n", r.graph, r.inputs);
  out += fmt::format("  {:<14} {:<16} {:<16} {:>9} {:<16} {:>9} {:<16} {:<34} {:>9} {:>8}\n", "torch", "version", "verdict", "output",
                     "(worst ratio)", "node", "(node verdict)", "culprit", "at culprit", "seconds");
  for (const TorchRow& row : r.rows) {
    if (!row.judged) {
      out += fmt::format("  {:<14} {:<16} {:<16} {}\n", row_name(row), row.version.empty() ? "-" : row.version, row_verdict(row),
                         row.skipped ? "(the bisection did not need it)" : row.problem);
      continue;
    }
    const std::string culprit = row.culprit.empty() ? "-" : fmt::format("{} ({})", row.culprit, row.culprit_op);
    out += fmt::format("  {:<14} {:<16} {:<16} {:>9} {:<16} {:>9} {:<16} {:<34} {:>9} {:>8.2f}\n", row_name(row), row.version, row_verdict(row),
                       recheck_ratio(row.worst_ratio), row.worst_output, recheck_ratio(row.node_ratio), row.node, culprit,
                       row.culprit_ratio > 0 ? recheck_ratio(row.culprit_ratio) : "-", row.seconds);
    if (row.compiled_failed) out += fmt::format("  {:<14} {}\n", "", row.compile_failure);
  }
  for (const Regression& g : r.regressions) {
    out += fmt::format("\n{}\n", g.summary);
    if (g.changed.empty()) continue;
    out += fmt::format("  compiled local error (RMSE / RMS(fp64)) at {} and at {}; eager's on the same inputs:\n", row_name(r.rows[g.good]),
                       row_name(r.rows[g.bad]));
    out += fmt::format("    {:<18} {:<30} {:>10} {:>10} {:>10} {:>9}  {}\n", "node", "op", "good", "bad", "eager", "change", "source");
    for (const NodeChange& c : g.changed)
      out += fmt::format("    {:<18} {:<30} {:>10.3g} {:>10.3g} {:>10.3g} {:>9}  {}\n", c.node, c.op, c.before, c.after, c.eager, recheck_ratio(c.factor),
                         c.source);
  }
  if (r.bisection) out += fmt::format("\nbisection: {}\n", r.bisection->summary);
  out += fmt::format("\n{:.2f} s\n", r.seconds);
  return out;
}

std::string recheck_to_json(const std::vector<RecheckResult>& cases) {
  json all = json::array();
  for (const RecheckResult& r : cases) {
    json rows = json::array();
    for (const TorchRow& row : r.rows)
      rows.push_back({{"label", row.torch.label}, {"python", row.torch.python}, {"version", row.version}, {"judged", row.judged},
                      {"skipped", row.skipped}, {"problem", row.problem},
                      {"level", row.judged ? level_name(row.level) : row.skipped ? "not_run" : "unusable"}, {"fails", row.fails},
                      {"compiled_failed", row.compiled_failed}, {"compile_failure", row.compile_failure},
                      {"worst_ratio", recheck_number(row.worst_ratio)}, {"worst_output", row.worst_output},
                      {"node_ratio", recheck_number(row.node_ratio)}, {"node", row.node}, {"culprit", row.culprit}, {"culprit_op", row.culprit_op},
                      {"culprit_source", row.culprit_source}, {"culprit_ratio", recheck_number(row.culprit_ratio)}, {"seconds", row.seconds}});
    json regressions = json::array();
    for (const Regression& g : r.regressions) {
      json changed = json::array();
      for (const NodeChange& c : g.changed)
        changed.push_back({{"node", c.node}, {"op", c.op}, {"source", c.source}, {"module_path", c.module_path}, {"before", recheck_number(c.before)},
                           {"after", recheck_number(c.after)}, {"eager", recheck_number(c.eager)}, {"factor", recheck_number(c.factor)}});
      regressions.push_back({{"good", g.good}, {"bad", g.bad}, {"fixed", g.fixed}, {"changed", changed},
                             {"first_diverging", g.first_diverging}, {"summary", g.summary}});
    }
    json bisection = nullptr;
    if (r.bisection)
      bisection = {{"first_bad", r.bisection->first_bad ? json(*r.bisection->first_bad) : json(nullptr)}, {"runs", r.bisection->runs},
                   {"summary", r.bisection->summary}};
    all.push_back({{"graph", r.graph}, {"inputs", r.inputs}, {"rows", rows}, {"regressions", regressions}, {"bisection", bisection},
                   {"seconds", r.seconds}});
  }
  return json{{"format", "pt2diff recheck"}, {"schema_version", 1}, {"cases", all}}.dump(2) + "\n";
}

}  // namespace pt2diff
