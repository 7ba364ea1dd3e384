// engine/report/text_report.cpp — the readable report: outputs first, then where error comes from.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pt2diff/diff.h"

namespace pt2diff {

namespace {
std::string num(double v) {
  if (v == 0) return "0";
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "nan";
  return fmt::format("{:.2e}", v);
}
std::string ulp(double v) { return std::isinf(v) ? "inf" : fmt::format("{:.1f}", v); }
}  // namespace

std::string to_text(const DiffResult& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("{} with {}: compiled = {}, reference = fp64, tol = {}", r.graph, r.inputs, r.compiled, r.rule.tol));
  line("");
  line("outputs (compiled vs eager, fp64 as referee):");
  for (const OutputVerdict& o : r.outputs)
    line(fmt::format("  {:<5} {:<20} {:<20} eager RMSE to fp64 {}  max ulp {}   {}", o.verdict.pass ? "PASS" : "FAIL", o.name,
                     o.verdict.reason, num(o.eager_to_fp64.rmse), ulp(o.eager_to_fp64.max_ulp), o.verdict.detail));
  line("");
  if (r.ranking.empty()) {
    line("no node introduces error: every local result is exact");
  } else {
    line(fmt::format("nodes introducing the most error (local: the node alone on fp64 inputs rounded to its dtypes):"));
    for (size_t i : r.ranking) {
      const NodeError& n = r.nodes[i];
      line(fmt::format("  {:>8} ulp  {:<14} {:<32} {}{}", ulp(n.local_ulp), n.name, n.target, n.source,
                       n.module_path.empty() ? "" : "  [" + n.module_path + "]"));
    }
  }
  line("");
  line("per node, in graph order (local and propagated error against fp64):");
  line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>10} {:>9} {:>10} {:>10}", "value", "op", "dtype", "shape", "local ulp",
                   "local rel", "prop ulp", "prop rel", "prop rmse"));
  for (const NodeError& n : r.nodes)
    for (const ValueError& v : n.values) {
      if (!v.compared) {
        line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9}", v.name, n.target, v.dtype, v.shape, "not compared"));
        continue;
      }
      if (v.local.exact_kind) {
        line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>10} {:>9} {:>10}", v.name, n.target, v.dtype, v.shape,
                         fmt::format("{} diff", v.local.mismatches), "", fmt::format("{} diff", v.propagated.mismatches), ""));
        continue;
      }
      line(fmt::format("  {:<16} {:<30} {:<9} {:<14} {:>9} {:>10} {:>9} {:>10} {:>10}", v.name, n.target, v.dtype, v.shape,
                       ulp(v.local.max_ulp), num(v.local.max_rel), ulp(v.propagated.max_ulp), num(v.propagated.max_rel),
                       num(v.propagated.rmse)));
    }
  if (!r.fixups.empty()) {
    line("");
    line(fmt::format("fp64 fix-ups applied: {}", fmt::join(r.fixups, "; ")));
  }
  if (!r.random_nodes.empty())
    line(fmt::format("random ops (native, fp64 and local runs draw the same stream): {}", fmt::join(r.random_nodes, ", ")));
  if (!r.not_comparable.empty()) line(fmt::format("not comparable in fp64 (bitcasts, float8): {}", fmt::join(r.not_comparable, ", ")));
  line("");
  line(fmt::format("{} ({} nodes, {:.2f} s)", r.diverged ? "DIVERGED" : "AGREE", r.nodes.size(), r.seconds));
  return out;
}

}  // namespace pt2diff
