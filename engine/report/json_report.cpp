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
          {"worst_reference", number(m.worst_reference)}, {"ref_rms", number(m.ref_rms)}, {"ref_max_abs", number(m.ref_max_abs)},
          {"relative_rmse", m.exact_kind ? json(nullptr) : number(relative_rmse(m))}, {"unit_roundoff", m.unit_roundoff}};
}

/// A verdict's level, its ratio to eager and its blind spot (null when the rule sees a 1% error).
void level_json(const Verdict& v, json& j) {
  j["level"] = level_name(v.level);
  j["error_ratio"] = number(v.error_ratio);
  j["blind_spot"] = v.blind_spot.empty() ? json(nullptr) : json(v.blind_spot);
  j["blind_detail"] = v.blind_detail;
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
                     {"local_relative", number(n.local_relative)},
                     {"compiled_local_relative", n.compiled_local_relative < 0 ? json(nullptr) : number(n.compiled_local_relative)},
                     {"compiled_vs_eager", n.compiled_local_relative < 0 ? json(nullptr) : number(n.compiled_vs_eager)},
                     {"values", values}});
    if (!n.backward_of.empty()) nodes.back()["backward_of"] = n.backward_of;  // a training step's backward node
  }
  return nodes;
}

json outputs_json(const DiffResult& r) {
  json outputs = json::array();
  for (const OutputVerdict& o : r.outputs) {
    json jo = {{"name", o.name}, {"role", o.role}, {"pass", o.verdict.pass}, {"reason", o.verdict.reason},
               {"detail", o.verdict.detail}, {"compiled_to_fp64", metrics(o.compiled_to_fp64)},
               {"eager_to_fp64", metrics(o.eager_to_fp64)}};
    level_json(o.verdict, jo);
    if (o.written_input) jo["value"] = o.value;  // a written graph input: "x" of "input 'x' after the graph"
    outputs.push_back(std::move(jo));
  }
  return outputs;
}

json shapes_json(const ShapeCompile& s) {
  auto dims = [](const std::vector<DynamicDim>& list) {
    json out = json::array();
    for (const DynamicDim& d : list)
      out.push_back({{"input", d.input}, {"dim", d.dim >= 0 ? json(d.dim) : json(nullptr)}, {"symbol", d.symbol},
                     {"min", d.min ? json(*d.min) : json(nullptr)}, {"max", d.max ? json(*d.max) : json(nullptr)}});
    return out;
  };
  return {{"mode", s.mode}, {"why_static", s.why_static}, {"dims", dims(s.dims)}, {"symbols", dims(s.symbols)},
          {"guards", s.guards}, {"note", s.note}, {"recompiles", s.recompiles}};
}

json compiles_json(const DiffResult& r) {
  json compiles = json::array();
  for (const CompileRecord& c : r.compiles)
    compiles.push_back({{"what", c.what}, {"nodes", c.nodes}, {"ok", c.ok}, {"failure", failure_kind_name(c.failure)}, {"message", c.message},
                        {"compile_seconds", c.compile_seconds}, {"run_seconds", c.run_seconds},
                        {"worker_start_seconds", c.worker_start_seconds},
                        {"shapes", c.shapes ? shapes_json(*c.shapes) : json(nullptr)}});
  return compiles;
}

json probes_json(const Localization& l) {
  json probes = json::array();
  for (const Probe& p : l.probes) {
    json jp = {{"phase", phase_name(p.phase)}, {"region", p.region}, {"begin", p.begin}, {"end", p.end}, {"fails", p.fails},
               {"value", p.value}, {"reason", p.verdict.reason}, {"detail", p.verdict.detail}, {"failure", failure_kind_name(p.failure)},
               {"compiled", p.compiled}, {"seconds", p.seconds}};
    level_json(p.verdict, jp);
    probes.push_back(std::move(jp));
  }
  return probes;
}

json culprit_json(const Culprit& c) {
  json j = {{"kind", culprit_kind_name(c.kind)}, {"conclusion", culprit_conclusion_name(c.conclusion)}, {"summary", c.summary}, {"nodes", c.nodes}, {"ops", c.ops},
          {"sources", c.sources}, {"module_paths", c.module_paths}, {"value", c.value},
          {"reason", c.verdict.reason}, {"detail", c.verdict.detail},
          {"compiled_to_fp64", metrics(c.compiled_to_fp64)}, {"eager_to_fp64", metrics(c.eager_to_fp64)}};
  level_json(c.verdict, j);
  return j;
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
          {"message", l.repro->message}, {"test", l.repro->test}, {"test_message", l.repro->test_message},
          {"artifacts", [&] {
             json files = json::array();
             for (const ReproArtifact& a : l.repro->artifacts) files.push_back({{"what", a.what}, {"path", a.path}});
             return files;
           }()},
          {"artifacts_message", l.repro->artifacts_message}};
}

/// The smallest eager set; null unless it was asked for.
json workaround_json(const DiffResult& r) {
  if (!r.workaround) return nullptr;
  const Workaround& w = *r.workaround;
  json nodes = json::array(), levers = json::array();
  for (const EagerNode& n : w.nodes)
    nodes.push_back({{"node", n.node}, {"op", n.op}, {"source", n.source}, {"module_path", n.module_path}, {"module_type", n.module_type}});
  for (const EagerLever& l : w.levers)
    levers.push_back({{"kind", l.kind == EagerLever::Kind::Module ? "module" : "source_line"}, {"module_path", l.module_path},
                      {"module_type", l.module_type}, {"source", l.source}, {"nodes", l.nodes}});
  return {{"conclusion", workaround_conclusion_name(w.conclusion)}, {"summary", w.summary}, {"candidates", w.candidates},
          {"nodes", nodes}, {"minimal", w.minimal}, {"compiles", w.compiles}, {"seconds", w.seconds}, {"levers", levers},
          {"lines", w.lines}, {"verified", w.verified}, {"verified_nodes", w.verified_nodes}, {"worst_output", w.worst_output},
          {"verification", w.verification}};
}

/// The localization; null where there was none.
json localization_json(const DiffResult& r) {
  if (!r.localization) return nullptr;
  const Localization& l = *r.localization;
  json localization = {{"found_by", l.found_by}, {"failing_outputs", l.failing_outputs}, {"cone_size", l.cone_size}, {"budget", l.budget},
                       {"compiles", l.compiles}, {"seconds", l.seconds}, {"exploded_suspects", l.exploded_suspects},
                       {"exploded_agrees", l.exploded_agrees}, {"culprit", culprit_json(l.culprit)}, {"probes", probes_json(l)}};
  localization["hints"] = hints_json(l.hints);
  localization["repro"] = repro_json(l);
  return localization;
}

/// The node verdict (results.h: NodeVerdict): every finding with the two local errors and their ratio.
json node_verdict_json(const DiffResult& r) {
  const NodeVerdict& nv = r.node_verdict;
  json findings = json::array();
  for (const NodeFinding& f : nv.findings) {
    json also = json::array();
    for (size_t i = 0; i < f.also.size(); ++i) also.push_back({{"node", f.also[i]}, {"ratio", number(f.also_ratios[i])}});
    findings.push_back({{"node", f.node}, {"op", f.op}, {"source", f.source}, {"module_path", f.module_path}, {"value", f.value},
                        {"dtype", f.dtype}, {"shape", f.shape}, {"level", level_name(f.level)}, {"ratio", number(f.ratio)},
                        {"roundoffs", number(f.roundoffs)}, {"eager_local", metrics(f.eager_local)},
                        {"compiled_local", metrics(f.compiled_local)}, {"also", std::move(also)}, {"kernels", f.kernels}});
  }
  json confirmation = nullptr;
  if (nv.confirmation) {
    const NodeConfirmation& c = *nv.confirmation;
    confirmation = {{"conclusion", c.conclusion}, {"eager", c.eager}, {"output", c.output}, {"before", number(c.before)},
                    {"after", number(c.after)}, {"bound", kNodeConfirmBound}, {"compiles", c.compiles}, {"seconds", c.seconds},
                    {"summary", c.summary}};
  }
  return {{"available", nv.available}, {"unavailable", nv.unavailable}, {"level", level_name(nv.level)}, {"judged", nv.judged},
          {"worst_ratio", number(nv.worst_ratio)}, {"worst_node", nv.worst_node}, {"node_ratio", r.rule.node_ratio},
          {"node_fail_ratio", r.rule.node_fail_ratio}, {"findings", std::move(findings)}, {"confirmation", std::move(confirmation)}};
}

/// The kernel table (kernels.h): every kernel call of the whole graph's compiled code and its buffers.
json kernels_json(const KernelTable& t) {
  json kernels = json::array();
  for (const KernelCall& k : t.kernels) {
    json buffers = json::array();
    for (const KernelBuffer& b : k.buffers) {
      json jb = {{"buffer", b.buffer}, {"node", b.node}, {"part_of", b.part_of}, {"dtype", b.dtype}, {"shape", b.shape},
                 {"judged", b.judged}, {"nonfinite", b.nonfinite}};
      if (b.judged) {
        jb["value"] = b.value;
        jb["reshaped"] = b.reshaped;
        jb["pass"] = b.pass;
        jb["reason"] = b.verdict.reason;
        jb["detail"] = b.verdict.detail;
        jb["metrics"] = metrics(b.metrics);
      } else {
        jb["why_not"] = b.why_not;
      }
      buffers.push_back(std::move(jb));
    }
    kernels.push_back({{"name", k.name}, {"nodes", k.nodes}, {"fails", k.fails}, {"buffers", std::move(buffers)},
                       {"has_code", !k.code.empty()}});
  }
  json inside = nullptr;
  if (t.inside) {
    const KernelCulprit& c = *t.inside;  // searched inside the first failing kernel (localize_kernel.cpp)
    const std::string code = t.first_failing >= 0 ? t.kernels[static_cast<size_t>(t.first_failing)].code : std::string();
    inside = {{"kind", c.kind}, {"kernel", c.kernel}, {"nodes", c.nodes}, {"op", c.op}, {"target", c.target},
              {"source", c.source}, {"module_path", c.module_path}, {"fused_with", c.fused_with}, {"summary", c.summary},
              {"compiles", c.compiles}, {"bound", c.bound}, {"seconds", c.seconds}, {"code_file", c.code_file}, {"code", code}};
  }
  auto index = [](int64_t i) -> json { return i < 0 ? json(nullptr) : json(i); };
  return {{"asked", t.asked},
          {"available", t.available},
          {"unavailable", t.unavailable},
          {"observed", t.observed},
          {"judged", t.judged},
          {"observed_bytes", t.observed_bytes},
          {"first_failing", index(t.first_failing)},
          {"first_failing_node", t.first_failing_node},
          {"first_nonfinite", index(t.first_nonfinite)},
          {"nonfinite_origin", t.nonfinite_origin ? json{{"kind", t.nonfinite_origin->kind}, {"kernel", t.nonfinite_origin->kernel},
                                                          {"node", t.nonfinite_origin->node}, {"detail", t.nonfinite_origin->detail}}
                                                    : json(nullptr)},
          {"inside", std::move(inside)},
          {"kernels", std::move(kernels)}};
}

json tolerance_json(const ToleranceRule& rule) {
  return {{"rule", rule_name(rule)}, {"tol", rule.tol}, {"fp32_multiplier", rule.fp32_multiplier},
          {"low_precision_multiplier", rule.low_precision_multiplier}, {"small_tensor_multipliers", rule.small_tensor_multipliers},
          {"suspicious_ratio", rule.suspicious_ratio}, {"node_ratio", rule.node_ratio}, {"node_fail_ratio", rule.node_fail_ratio}};
}

json stages_json(const DiffResult& r) {
  json stages = json::array();
  for (const StageRecord& st : r.stages)
    stages.push_back({{"name", st.name}, {"seconds", st.seconds}, {"peak_gpu_bytes", st.peak_gpu_bytes}, {"host_bytes", st.host_bytes}});
  return stages;
}
}  // namespace

std::string shapes_to_json(const ShapeCompile& shapes) { return shapes_json(shapes).dump(); }

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
                         {"peak_gpu_bytes", r.devices.peak_gpu_bytes}, {"start_host_bytes", r.devices.start_host_bytes},
                         {"peak_host_bytes", r.devices.peak_host_bytes}}},
            {"tolerance", tolerance_json(r.rule)},
            {"verdict", graph_failed ? "compiler_failed" : r.diverged ? "diverged" : "agree"},
            {"level", level_name(result_level(r))},
            {"suspicious", r.suspicious},
            {"fail_on_suspicious", r.fail_on_suspicious},
            {"fails", counts_as_failing(r)},
            {"node_verdict", node_verdict_json(r)},
            {"compiled_failed", r.compiled_failed},
            {"compiles", compiles_json(r)},
            {"stages", stages_json(r)},
            {"kernels", kernels_json(r.kernels)},
            {"localization", localization_json(r)},
            {"workaround", workaround_json(r)},
            {"outputs", outputs_json(r)},
            {"ranking", ranking},
            {"nodes", nodes_json(r)},
            {"fp64_fixups", r.fixups},
            {"autocast", autocast_json(r.autocast)},
            {"not_comparable", r.not_comparable},
            {"random_nodes", r.random_nodes},
            {"warnings", r.warnings},
            {"seconds", r.seconds}};
  if (!r.eager_nonfinite.empty()) j["eager_nonfinite"] = r.eager_nonfinite;  // a training step's own NaN/Inf
  return j.dump(2) + "\n";
}

}  // namespace pt2diff
