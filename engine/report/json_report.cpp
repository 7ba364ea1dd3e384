// engine/report/json_report.cpp — the report as JSON (docs/report.schema.json).
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/inspect/autocast_json.h"
#include "pt2diff/diff.h"

namespace pt2diff {

namespace {
using nlohmann::json;

/// JSON has no infinities or NaN: they are written as strings, like torch.export's own JSON.
json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json metrics(const Metrics& m) {
  return {{"exact_kind", m.exact_kind}, {"numel", m.numel}, {"max_abs", number(m.max_abs)}, {"max_rel", number(m.max_rel)},
          {"rmse", number(m.rmse)}, {"max_ulp", number(m.max_ulp)}, {"cosine", number(m.cosine)}, {"nan", m.nan}, {"inf", m.inf},
          {"mismatches", m.mismatches}, {"worst_index", m.worst_index}, {"worst_value", number(m.worst_value)},
          {"worst_reference", number(m.worst_reference)}};
}

/// One value of a node: its metrics when it was compared (compiled local ones only where the exploded compile ran).
json value_json(const ValueError& v) {
  json jv = {{"name", v.name}, {"dtype", v.dtype}, {"shape", v.shape}, {"compared", v.compared}};
  if (v.compared) {
    jv["local"] = metrics(v.local);
    jv["propagated"] = metrics(v.propagated);
    if (v.has_compiled_local) jv["compiled_local"] = metrics(v.compiled_local);
  }
  return jv;
}

/// Every node in graph order, with its values.
json nodes_json(const DiffResult& r) {
  json nodes = json::array();
  for (const NodeError& n : r.nodes) {
    json values = json::array();
    for (const ValueError& v : n.values) values.push_back(value_json(v));
    nodes.push_back({{"name", n.name}, {"op", n.target}, {"source", n.source}, {"module_path", n.module_path},
                     {"local_ulp", number(n.local_ulp)},
                     {"compiled_local_ulp", n.compiled_local_ulp < 0 ? json(nullptr) : number(n.compiled_local_ulp)},
                     {"values", values}});
  }
  return nodes;
}

json outputs_json(const DiffResult& r) {
  json outputs = json::array();
  for (const OutputVerdict& o : r.outputs)
    outputs.push_back({{"name", o.name}, {"role", o.role}, {"pass", o.verdict.pass}, {"reason", o.verdict.reason},
                       {"detail", o.verdict.detail}, {"compiled_to_fp64", metrics(o.compiled_to_fp64)},
                       {"eager_to_fp64", metrics(o.eager_to_fp64)}});
  return outputs;
}

json compiles_json(const DiffResult& r) {
  json compiles = json::array();
  for (const CompileRecord& c : r.compiles)
    compiles.push_back({{"what", c.what}, {"nodes", c.nodes}, {"ok", c.ok}, {"failure", failure_kind_name(c.failure)}, {"message", c.message},
                        {"compile_seconds", c.compile_seconds}, {"run_seconds", c.run_seconds}});
  return compiles;
}

json probes_json(const Localization& l) {
  json probes = json::array();
  for (const Probe& p : l.probes)
    probes.push_back({{"phase", phase_name(p.phase)}, {"region", p.region}, {"begin", p.begin}, {"end", p.end}, {"fails", p.fails},
                      {"value", p.value}, {"reason", p.verdict.reason}, {"detail", p.verdict.detail}, {"failure", failure_kind_name(p.failure)},
                      {"compiled", p.compiled}, {"seconds", p.seconds}});
  return probes;
}

json culprit_json(const Culprit& c) {
  return {{"kind", culprit_kind_name(c.kind)}, {"conclusion", culprit_conclusion_name(c.conclusion)}, {"summary", c.summary}, {"nodes", c.nodes}, {"ops", c.ops},
          {"sources", c.sources}, {"module_paths", c.module_paths}, {"value", c.value},
          {"reason", c.verdict.reason}, {"detail", c.verdict.detail},
          {"compiled_to_fp64", metrics(c.compiled_to_fp64)}, {"eager_to_fp64", metrics(c.eager_to_fp64)}};
}

/// The hints with all their notes and their evidence as an object.
json hints_json(const std::vector<Hint>& all) {
  json hints = json::array();
  for (const Hint& h : all) {
    json evidence = json::object();
    for (const auto& [name, value] : h.evidence) evidence[name] = number(value);
    hints.push_back({{"kind", h.kind}, {"finding", h.finding}, {"summary", h.summary}, {"suggestion", h.suggestion},
                     {"evidence", evidence}, {"notes", h.notes}});
  }
  return hints;
}

/// The repro written (or why not); null where none was asked for.
json repro_json(const Localization& l) {
  if (!l.repro) return nullptr;
  return {{"ok", l.repro->ok}, {"archive", l.repro->archive}, {"inputs", l.repro->inputs}, {"command", l.repro->command},
          {"message", l.repro->message}};
}

/// The localization; null where there was none.
json localization_json(const DiffResult& r) {
  if (!r.localization) return nullptr;
  const Localization& l = *r.localization;
  json localization = {{"failing_outputs", l.failing_outputs}, {"cone_size", l.cone_size}, {"budget", l.budget},
                       {"compiles", l.compiles}, {"seconds", l.seconds}, {"exploded_suspects", l.exploded_suspects},
                       {"exploded_agrees", l.exploded_agrees}, {"culprit", culprit_json(l.culprit)}, {"probes", probes_json(l)}};
  localization["hints"] = hints_json(l.hints);
  localization["repro"] = repro_json(l);
  return localization;
}

json tolerance_json(const ToleranceRule& rule) {
  return {{"rule", rule_name(rule)}, {"tol", rule.tol}, {"fp32_multiplier", rule.fp32_multiplier},
          {"low_precision_multiplier", rule.low_precision_multiplier}, {"small_tensor_multipliers", rule.small_tensor_multipliers}};
}
}  // namespace

std::string hints_to_json(const std::vector<Hint>& hints) { return hints_json(hints).dump(2) + "\n"; }

std::string to_json(const DiffResult& r) {
  bool graph_failed = false;
  for (const CompileRecord& c : r.compiles) graph_failed = graph_failed || (c.what == "graph" && !c.ok);
  json ranking = json::array();
  for (size_t i : r.ranking) ranking.push_back(r.nodes[i].name);
  json j = {{"schema_version", 1},
            {"graph", r.graph},
            {"inputs", r.inputs},
            {"compiled", r.compiled},
            {"devices", {{"native", r.devices.native}, {"reference", r.devices.reference}, {"why", r.devices.why},
                         {"peak_gpu_bytes", r.devices.peak_gpu_bytes}}},
            {"tolerance", tolerance_json(r.rule)},
            {"verdict", graph_failed ? "compiler_failed" : r.diverged ? "diverged" : "agree"},
            {"compiled_failed", r.compiled_failed},
            {"compiles", compiles_json(r)},
            {"localization", localization_json(r)},
            {"outputs", outputs_json(r)},
            {"ranking", ranking},
            {"nodes", nodes_json(r)},
            {"fp64_fixups", r.fixups},
            {"autocast", autocast_json(r.autocast)},
            {"not_comparable", r.not_comparable},
            {"random_nodes", r.random_nodes},
            {"warnings", r.warnings},
            {"seconds", r.seconds}};
  return j.dump(2) + "\n";
}

}  // namespace pt2diff
