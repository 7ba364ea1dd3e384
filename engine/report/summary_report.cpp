// engine/report/summary_report.cpp — the report in a few lines: what a failing test prints
// (pt2diff/testing.h) and what fits a log line.
#include <fmt/format.h>

#include "graphs/wording/wording.h"
#include "pt2diff/diff.h"

namespace pt2diff {

std::string to_summary(const DiffResult& r) {
  std::string out;
  if (r.compiled_failed) {
    for (const CompileRecord& c : r.compiles)
      if (!c.ok) out += fmt::format("the {} compile failed ({}): {}\n", c.what, failure_kind_name(c.failure), c.message);
  }
  size_t failing = 0;
  std::string notes;  // suspicious and vacuous outputs: said whether the run fails or not
  for (const OutputVerdict& o : r.outputs) {
    const Verdict& v = o.verdict;
    if (v.level == Level::Suspicious) {
      notes += fmt::format("output {} is suspicious: {}\n", o.name, wording::suspicious(v, r.rule).text());
      if (r.fail_on_suspicious) ++failing;
    }
    if (!v.blind_spot.empty()) notes += fmt::format("output {} is vacuous {}\n", o.name, wording::vacuous(v, r.rule).text());
    if (v.pass) continue;
    ++failing;
    out += fmt::format("output {} diverges ({}): {}\n", o.name, v.reason, v.detail);
  }
  const NodeVerdict& nv = r.node_verdict;
  for (const NodeFinding& f : nv.findings) {
    notes += wording::stands_out(f, r.rule).text() + "\n";
    if (f.level == Level::Fail || r.fail_on_suspicious) ++failing;
  }
  if (nv.confirmation) notes += wording::confirmation(*nv.confirmation).text() + "\n";
  out += notes;
  if (!failing && !r.compiled_failed) {
    return fmt::format("agrees: {} output{} of {} pass rule {} (tol {:g}) with {}\n", r.outputs.size(), r.outputs.size() == 1 ? "" : "s",
                       r.graph, rule_name(r.rule), r.rule.tol, r.compiled) + notes;
  }
  if (r.localization) {
    const Localization& l = *r.localization;
    const Culprit& c = l.culprit;
    out += fmt::format("culprit ({}, {} compiles): {}\n", culprit_kind_name(c.kind), l.compiles, c.summary);
    for (size_t i = 0; i < c.nodes.size(); ++i)
      out += fmt::format("  {} ({}) at {}{}\n", c.nodes[i], c.ops[i], c.sources[i].empty() ? "no source line" : c.sources[i],
                         c.module_paths[i].empty() ? "" : " [" + c.module_paths[i] + "]");
    if (c.named())
      out += fmt::format("  {}: compiled RMSE to fp64 {:.3g}, eager {:.3g}\n", c.value, c.compiled_to_fp64.rmse, c.eager_to_fp64.rmse);
    for (const Hint& h : l.hints) {
      out += "hint " + wording::hint_line(h) + "\n";
      if (!h.suggestion.empty()) out += fmt::format("  -> {}\n", h.suggestion);
    }
    if (l.repro && l.repro->ok) out += fmt::format("repro: {}\n", l.repro->command);
    if (l.repro && !l.repro->test.empty()) out += fmt::format("unit test: python {}\n", l.repro->test);
  }
  if (r.workaround && r.workaround->conclusion != Workaround::Conclusion::NotNeeded) {
    out += fmt::format("workaround: {}\n", r.workaround->summary);
    if (r.workaround->verified)
      for (const std::string& l : r.workaround->lines) out += "  " + l + "\n";
  }
  for (const std::string& w : r.warnings) out += "warning: " + w + "\n";
  out += fmt::format("({} with {}, compiled = {}, rule {}, tol {:g}{})\n", r.graph, r.inputs, r.compiled, rule_name(r.rule), r.rule.tol,
                     r.devices.native == "cpu" ? "" : fmt::format(", eager on {}, fp64 on {}", r.devices.native, r.devices.reference));
  return out;
}

Level result_level(const DiffResult& r) {
  if (r.diverged || r.compiled_failed || r.node_verdict.level == Level::Fail) return Level::Fail;
  return r.suspicious || r.node_verdict.level == Level::Suspicious ? Level::Suspicious : Level::Pass;
}

bool counts_as_failing(const DiffResult& r) {
  const Level level = result_level(r);
  return level == Level::Fail || (r.fail_on_suspicious && level == Level::Suspicious);
}

std::string to_failure_message(const DiffResult& r) { return wording::failure_lead(r) + "\n" + to_summary(r); }

}  // namespace pt2diff
