// engine/report/dist_report.cpp — the report of `pt2diff dist` as text and JSON (pt2diff/dist.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pt2diff/dist.h"

namespace pt2diff {

namespace {

using json = nlohmann::json;

std::string verdict_word(const OutputVerdict& o) {
  return o.verdict.level == Level::Fail ? "FAIL" : o.verdict.level == Level::Suspicious ? "SUSPICIOUS" : "ok";
}

std::string rank_local_line(const DiffResult& d) {
  const Level level = result_level(d);
  std::string line = fmt::format("rank-local program ({} nodes judged): {}", d.nodes.size(), level_name(level));
  if (d.compiled_failed)
    for (const CompileRecord& c : d.compiles)
      if (!c.ok) return line + fmt::format("; the {} compile failed: {}", c.what, c.message);
  if (d.localization) line += "; culprit: " + d.localization->culprit.summary;
  else if (d.node_verdict.available && d.node_verdict.level != Level::Pass && !d.node_verdict.findings.empty())
    line += fmt::format("; node verdict {}: {} ({}) at {}, {:.3g}x eager's local error", level_name(d.node_verdict.level),
                        d.node_verdict.findings.front().node, d.node_verdict.findings.front().op,
                        d.node_verdict.findings.front().source, d.node_verdict.findings.front().ratio);
  return line;
}

}  // namespace

std::string to_text(const DistResult& r) {
  std::string out = fmt::format("pt2diff dist {}: {} ranks ({} capture), compiled = {} in a {} process group\n", r.dir, r.world_size,
                                r.backend, r.compiled, r.process_backend);
  for (const DistGraphResult& g : r.graphs) {
    out += fmt::format("\ngraph {} ({}{}): {}\n", g.graph, g.kind, g.where.empty() ? "" : ", " + g.where,
                       g.compiled_failed ? "COMPILE FAILED" : g.diverged ? "DIVERGES" : g.suspicious ? "SUSPICIOUS" : "agrees");
    for (const DistCollective& c : g.collectives)
      out += fmt::format("  collective {} ({}{} over group '{}'){}: eager's fold vs fp64's, max rel {:.3g}\n", c.node, c.op,
                         c.reduce.empty() ? "" : ", " + c.reduce, c.group, c.source.empty() ? "" : " at " + c.source, c.eager_max_relative);
    for (const DistRankResult& rr : g.ranks) {
      out += fmt::format("  rank {}: {}", rr.rank, rr.compiled_failed ? "compiled step failed: " + rr.compile_message
                                                   : rr.diverged ? "compiled step DIVERGES"
                                                   : rr.suspicious ? "compiled step SUSPICIOUS" : "compiled step agrees");
      if (!rr.compiled_failed) out += fmt::format(" (compile {:.1f} s, run {:.3f} s)", rr.compile_seconds, rr.run_seconds);
      out += "\n";
      for (const OutputVerdict& o : rr.outputs)
        out += fmt::format("    {:<4} {} ({}): {}; compiled max abs {:.3g} vs eager {:.3g} to fp64\n", verdict_word(o), o.name, o.role,
                           o.verdict.reason, o.compiled_to_fp64.max_abs, o.eager_to_fp64.max_abs);
      if (rr.rank_local) {
        out += "    " + rank_local_line(*rr.rank_local) + "\n";
        if (!rr.fed.empty()) out += fmt::format("      fed from the reference: {}\n", fmt::join(rr.fed, ", "));
      }
    }
    for (const DistBoundary& b : g.boundaries)
      out += fmt::format("  boundary {} on rank {}: input {} ({}), result {} ({}, max abs {:.3g} to fp64)\n", b.node, b.rank,
                         level_name(b.input.level), b.input.reason, level_name(b.output.level), b.output.reason, b.output_to_fp64.max_abs);
    for (const std::string& t : g.passes_tried) out += "  without the communication pass " + t + "\n";
    for (const DistAcrossRanks& a : g.across)
      out += a.equal ? fmt::format("  across ranks: {} bit-identical on every compiled rank, as in the reference\n", a.output)
                     : fmt::format("  across ranks: {} differs on rank{} {} from rank 0 (max abs {:.3g}), equal in the reference\n",
                                   a.output, a.differing.size() > 1 ? "s" : "", fmt::join(a.differing, ", "), a.max_abs);
  }
  out += "\n";
  if (r.culprits.empty())
    out += r.compiled_failed ? "no culprit: a compiled rank failed (above)\n"
                             : r.diverged || r.suspicious ? "no culprit named\n" : "every rank agrees with the reference\n";
  for (const DistCulprit& c : r.culprits) {
    out += fmt::format("culprit ({}{}): {}\n", c.kind, c.collective_kind.empty() ? "" : ", " + c.collective_kind, c.summary);
    for (size_t i = 0; i < c.nodes.size(); ++i)
      out += fmt::format("  {} ({}){}{}\n", c.nodes[i], i < c.ops.size() ? c.ops[i] : "",
                         i < c.sources.size() && !c.sources[i].empty() ? " at " + c.sources[i] : "",
                         i < c.module_paths.size() && !c.module_paths[i].empty() ? ", module " + c.module_paths[i] : "");
  }
  out += fmt::format("({:.1f} s)\n", r.seconds);
  return out;
}

std::string to_json(const DistResult& r) {
  json doc = {{"format", "pt2diff dist 1"}, {"dir", r.dir}, {"world_size", r.world_size}, {"backend", r.backend},
              {"compiled", r.compiled}, {"process_backend", r.process_backend}, {"diverged", r.diverged}, {"suspicious", r.suspicious},
              {"compiled_failed", r.compiled_failed}, {"seconds", r.seconds}};
  json graphs = json::array();
  for (const DistGraphResult& g : r.graphs) {
    json jg = {{"graph", g.graph}, {"kind", g.kind}, {"where", g.where}, {"diverged", g.diverged}, {"suspicious", g.suspicious}, {"compiled_failed", g.compiled_failed}};
    jg["collectives"] = json::array();
    for (const DistCollective& c : g.collectives)
      jg["collectives"].push_back({{"node", c.node}, {"op", c.op}, {"group", c.group}, {"reduce", c.reduce}, {"source", c.source},
                                   {"eager_max_relative", c.eager_max_relative}});
    jg["ranks"] = json::array();
    for (const DistRankResult& rr : g.ranks) {
      json jr = {{"rank", rr.rank}, {"archive", rr.archive}, {"diverged", rr.diverged}, {"suspicious", rr.suspicious}, {"compiled_failed", rr.compiled_failed},
                 {"compile_message", rr.compile_message}, {"compile_seconds", rr.compile_seconds}, {"run_seconds", rr.run_seconds},
                 {"fed", rr.fed}};
      jr["outputs"] = json::array();
      for (const OutputVerdict& o : rr.outputs)
        jr["outputs"].push_back({{"name", o.name}, {"role", o.role}, {"level", level_name(o.verdict.level)}, {"pass", o.verdict.pass},
                                 {"reason", o.verdict.reason}, {"detail", o.verdict.detail},
                                 {"compiled_to_fp64_max_abs", o.compiled_to_fp64.max_abs},
                                 {"eager_to_fp64_max_abs", o.eager_to_fp64.max_abs}});
      jr["rank_local"] = rr.rank_local ? json::parse(to_json(*rr.rank_local)) : json();
      jg["ranks"].push_back(std::move(jr));
    }
    jg["boundaries"] = json::array();
    for (const DistBoundary& b : g.boundaries)
      jg["boundaries"].push_back({{"node", b.node}, {"rank", b.rank}, {"input", level_name(b.input.level)}, {"input_reason", b.input.reason},
                                  {"output", level_name(b.output.level)}, {"output_reason", b.output.reason},
                                  {"output_to_fp64_max_abs", b.output_to_fp64.max_abs}});
    jg["passes_tried"] = g.passes_tried;
    jg["across"] = json::array();
    for (const DistAcrossRanks& a : g.across)
      jg["across"].push_back({{"output", a.output}, {"equal", a.equal}, {"differing", a.differing}, {"max_abs", a.max_abs}});
    graphs.push_back(std::move(jg));
  }
  doc["graphs"] = std::move(graphs);
  json culprits = json::array();
  for (const DistCulprit& c : r.culprits)
    culprits.push_back({{"kind", c.kind}, {"graph", c.graph}, {"rank", c.rank}, {"nodes", c.nodes}, {"ops", c.ops}, {"sources", c.sources},
                        {"module_paths", c.module_paths}, {"collective_kind", c.collective_kind}, {"summary", c.summary}});
  doc["culprits"] = std::move(culprits);
  return doc.dump(1) + "\n";
}

}  // namespace pt2diff
