// engine/report/recheck_report.cpp — a recheck over torch installations (pt2diff/recheck.h) as a table for the
// terminal and as JSON (docs/recheck.schema.json).
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graphs/json_fields.h"
#include "pt2diff/recheck.h"

namespace pt2diff {

namespace {

std::string recheck_ratio(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.3g}x", v); }

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

}  // namespace pt2diff

namespace pt2diff::json_fields {

Object<TorchRow> describe(Tag<TorchRow>) {
  using F = Fields<TorchRow>;
  const TorchInstall& (*torch)(const TorchRow&) = [](const TorchRow& r) -> const TorchInstall& { return r.torch; };
  return Object<TorchRow>(
      "row",
      {F::of("label", torch, &TorchInstall::label, "the LABEL of --torch LABEL=PYTHON; empty: the version names it"),
       F::of("python", torch, &TorchInstall::python, "the interpreter of the torch installation"),
       F::of("version", &TorchRow::version,
             "torch.__version__ as that Python reports it; empty when it could not be read"),
       F::of("judged", &TorchRow::judged, "the diff ran at this torch"),
       F::of("skipped", &TorchRow::skipped, "not run: the bisection did not need it"),
       F::of("problem", &TorchRow::problem,
             "why this torch could not judge the graph, one line (no torch, a version outside 2.11-2.14, an archive it "
             "cannot load)"),
       F::computed(
           "level",
           [](const TorchRow& r) {
             return std::string(r.judged ? level_name(r.level) : r.skipped ? "not_run" : "unusable");
           },
           one_of({"pass", "suspicious", "fail", "unusable", "not_run"})),
       F::of("fails", &TorchRow::fails, "the run counts as failing (what exit code 1 means)"),
       F::of("compiled_failed", &TorchRow::compiled_failed),
       F::of("compile_failure", &TorchRow::compile_failure,
             "the first failed compile: which, its failure kind and message"),
       F::of("worst_ratio", &TorchRow::worst_ratio, "the largest output error ratio: compiled RMSE to fp64 / eager's"),
       F::of("worst_output", &TorchRow::worst_output),
       F::of("node_ratio", &TorchRow::node_ratio, "the node verdict's worst ratio: compiled local error / eager's"),
       F::of("node", &TorchRow::node, "the node verdict's first finding, else its worst node"),
       F::of("culprit", &TorchRow::culprit,
             "the localization's culprit: a node, or 'first .. last' of a window; empty when none was named"),
       F::of("culprit_op", &TorchRow::culprit_op), F::of("culprit_source", &TorchRow::culprit_source),
       F::of(
           "culprit_ratio", &TorchRow::culprit_ratio,
           "the culprit (op or window) compiled alone on fp64-exact inputs, its error over eager's (the localization's "
           "verdict on it); 0 without a culprit"),
       F::of("seconds", &TorchRow::seconds, finite_type())},
      "one torch's verdict on the graph");
}

Object<NodeChange> describe(Tag<NodeChange>) {
  using F = Fields<NodeChange>;
  return Object<NodeChange>(
      "", {F::of("node", &NodeChange::node), F::of("op", &NodeChange::op), F::of("source", &NodeChange::source),
           F::of("module_path", &NodeChange::module_path),
           F::of("before", &NodeChange::before, "compiled local relative error (RMSE / RMS(fp64)) at the good torch"),
           F::of("after", &NodeChange::after, "the same at the bad torch"),
           F::of("eager", &NodeChange::eager, "eager's local relative error on the same inputs"),
           F::of("factor", &NodeChange::factor, "after / before")});
}

Object<Regression> describe(Tag<Regression>) {
  using F = Fields<Regression>;
  return Object<Regression>(
      "",
      {F::of("good", &Regression::good, "the row that passes"), F::of("bad", &Regression::bad, "the row that fails"),
       F::of("fixed", &Regression::fixed, "the later torch is the good one"),
       F::of("changed", &Regression::changed,
             "nodes whose compiled local error changed by --change-factor, above eager's own local error; in graph "
             "order"),
       F::of("first_diverging", &Regression::first_diverging,
             "the failing torch's culprit: 'node (op) at source'; empty when none was named"),
       F::of("summary", &Regression::summary)});
}

Object<Bisection> describe(Tag<Bisection>) {
  using F = Fields<Bisection>;
  return Object<Bisection>("", {F::of("first_bad", &Bisection::first_bad, "the row of the first bad torch"),
                                F::of("runs", &Bisection::runs), F::of("summary", &Bisection::summary)});
}

Object<RecheckResult> describe(Tag<RecheckResult>) {
  using F = Fields<RecheckResult>;
  return Object<RecheckResult>("",
                               {F::of("graph", &RecheckResult::graph), F::of("inputs", &RecheckResult::inputs),
                                F::of("rows", &RecheckResult::rows, "one per --torch, in the order given"),
                                F::of("regressions", &RecheckResult::regressions,
                                      "one per adjacent pair of judged torches whose verdicts differ"),
                                F::of("bisection", &RecheckResult::bisection, "with --bisect-versions; null otherwise"),
                                F::of("seconds", &RecheckResult::seconds, finite_type())});
}

/// The document: its format's name and version around the cases.
struct RecheckDocument {
  const std::vector<RecheckResult>& cases;
};

Object<RecheckDocument> describe(Tag<RecheckDocument>) {
  using F = Fields<RecheckDocument>;
  return Object<RecheckDocument>(
      "",
      {F::computed(
           "format", [](const RecheckDocument&) { return std::string("pt2diff recheck"); },
           Type{{{"const", "pt2diff recheck"}}}),
       F::computed(
           "schema_version", [](const RecheckDocument&) { return 1; }, Type{{{"const", 1}}}),
       F::computed(
           "cases", [](const RecheckDocument& d) { return write_value(d.cases); },
           type_of<std::vector<RecheckResult>>())},
      "What `pt2diff recheck --json` writes (docs/upstream.md): each case (a graph, a repro directory, or a batch "
      "summary's cases) judged through the compilers of other torch installations, one fp64 reference for all.");
}

}  // namespace pt2diff::json_fields

namespace pt2diff {

std::string recheck_to_json(const std::vector<RecheckResult>& cases) {
  return json_fields::write_value(json_fields::RecheckDocument{cases}).dump(2) + "\n";
}

std::string recheck_json_schema() {
  return json_fields::document_schema("pt2diff recheck", json_fields::object_of<json_fields::RecheckDocument>()).dump(2) +
         "\n";
}

}  // namespace pt2diff
