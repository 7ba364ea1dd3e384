// engine/report/summary_report.cpp — the report in a few lines: what a failing test prints
// (pt2diff/testing.h) and what fits a log line.
#include <fmt/format.h>
#include <fmt/ranges.h>

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
      notes += fmt::format("output {} is suspicious: it passes ({}), but compiled is {:.3g}x farther from fp64 than eager (RMSE {:.3g} vs "
                           "{:.3g}; --suspicious-ratio {:g})\n",
                           o.name, v.reason, v.error_ratio, v.rmse_result, v.rmse_eager, r.rule.suspicious_ratio);
      if (r.fail_on_suspicious) ++failing;
    }
    if (!v.blind_spot.empty())
      notes += fmt::format("output {}: the verdict is vacuous ({}): {}; try --rule relative\n", o.name, v.blind_spot, v.blind_detail);
    if (v.pass) continue;
    ++failing;
    out += fmt::format("output {} diverges ({}): {}\n", o.name, v.reason, v.detail);
  }
  const NodeVerdict& nv = r.node_verdict;
  for (const NodeFinding& f : nv.findings) {
    notes += fmt::format("node {} ({}) stands out ({}): fed fp64-exact inputs, its compiled result is {:.3g}x farther from fp64 than "
                         "eager's (RMSE {:.3g} vs {:.3g}; --node-ratio {:g}) at {}{}{}\n",
                         f.node, f.op, level_name(f.level), f.ratio, f.compiled_local.rmse, f.eager_local.rmse, r.rule.node_ratio,
                         f.source.empty() ? "no source line" : f.source, f.module_path.empty() ? "" : " [" + f.module_path + "]",
                         f.also.empty() ? "" : fmt::format("; the same op and shape stand out at {}", fmt::join(f.also, ", ")));
    if (f.level == Level::Fail || r.fail_on_suspicious) ++failing;
  }
  if (nv.confirmation) notes += fmt::format("confirmation ({}): {}\n", nv.confirmation->conclusion, nv.confirmation->summary);
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
      out += fmt::format("hint {} ({}): {}\n", h.kind, h.finding, h.summary);
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

std::string to_failure_message(const DiffResult& r) {
  if (!r.diverged && !r.compiled_failed && r.suspicious)
    return "pt2diff: the compiled graph is suspicious: farther from fp64 than eager by the suspicious ratio or more "
           "(--fail-on-suspicious)\n" + to_summary(r);
  if (!r.diverged && !r.compiled_failed && !r.node_verdict.findings.empty())
    return fmt::format("pt2diff: the compiled graph is {} at a node: fed fp64-exact inputs, a node's compiled result is far farther "
                       "from fp64 than eager's (the node verdict; the outputs pass the rule)\n",
                       level_name(r.node_verdict.level)) + to_summary(r);
  return "pt2diff: the compiled graph does not agree with the reference\n" + to_summary(r);
}

}  // namespace pt2diff
