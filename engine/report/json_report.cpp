// engine/report/json_report.cpp — the report as JSON, declared once: each object's fields with their types and meaning
// (json_fields.h). to_json() writes from this description and report_json_schema() is docs/report.schema.json, read off
// it (the ctest JsonSchemas.AreTheDocsSchemas keeps the file equal to it).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "graphs/rules/rule_registry.h"
#include "engine/hints/hint_registry.h"
#include "engine/inspect/autocast_json.h"
#include "graphs/json_fields.h"
#include "engine/report/report_fields.h"
#include "pt2diff/diff.h"

namespace pt2diff {

namespace jf = json_fields;
using jf::Fields;
using jf::Object;
using jf::Type;
using nlohmann::json;

namespace {
template <class T>
std::vector<jf::Field<T>> join(std::vector<jf::Field<T>> a, std::vector<jf::Field<T>> b) {
  for (jf::Field<T>& f : b) a.push_back(std::move(f));
  return a;
}

Type level_type() { return jf::names_of(level_name, {Level::Pass, Level::Suspicious, Level::Fail}); }

/// The names in `all`, each once, in their first order.
Type distinct_names(const std::vector<const char*>& all) {
  json names = json::array();
  for (const char* n : all)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return {{{"enum", names}}};
}

/// Every reason a verdict can give: judge()'s own, then each rule's (the rules' table, rule_registry.cpp).
Type reason_type() {
  std::vector<const char*> reasons = general_verdict_reasons();
  for (const RuleKind* k : rule_kinds()) reasons.insert(reasons.end(), k->reasons.begin(), k->reasons.end());
  return distinct_names(reasons);
}

/// The hints' kinds or findings, from the experiments' table (hint_registry.cpp).
Type hint_names(bool findings) {
  std::vector<const char*> names;
  for (const HintExperiment& e : hint_experiments())
    if (findings) names.insert(names.end(), e.findings.begin(), e.findings.end());
    else names.push_back(e.kind);
  return distinct_names(names);
}

/// A verdict's level, its ratio to eager and its blind spot (null when the rule sees a 1% error), for any T holding a
/// Verdict.
template <class T>
std::vector<jf::Field<T>> level_fields(const Verdict& (*verdict)(const T&)) {
  using F = Fields<T>;
  return {F::computed("level", [verdict](const T& v) { return std::string(level_name(verdict(v).level)); }, level_type(),
                      "fail: the rule fails; suspicious: the rule passes but compiled is at least tolerance.suspicious_ratio "
                      "times farther from fp64 than eager (error_ratio); pass (docs/verdicts.md)"),
          F::computed("error_ratio", [verdict](const T& v) { return verdict(v).error_ratio; },
                      "RMSE(compiled, fp64) / max(RMSE(eager, fp64), eager's unit roundoff x RMS(fp64)); 0 where not measured"),
          F::computed(
              "blind_spot",
              [verdict](const T& v) {
                return verdict(v).blind_spot.empty() ? std::optional<std::string>() : verdict(v).blind_spot;
              },
              jf::one_of({"atol_dominates", "rmse_slack_dominates"}).or_null(),
              "why the rule cannot see a 1% error in this value (a vacuous verdict); null: it can. atol_dominates: max "
              "|fp64| <= tol/(0.01 - tol); rmse_slack_dominates: 1% of RMS(fp64) <= tol/10"),
          F::computed("blind_detail", [verdict](const T& v) { return verdict(v).blind_detail; },
                      "the numbers behind blind_spot; empty when null")};
}

/// A verdict's reason and detail, for any T holding a Verdict.
template <class T>
std::vector<jf::Field<T>> reason_fields(const Verdict& (*verdict)(const T&), Type reason = Type{{{"type", "string"}}}) {
  using F = Fields<T>;
  return {F::computed("reason", [verdict](const T& v) { return verdict(v).reason; }, std::move(reason)),
          F::computed("detail", [verdict](const T& v) { return verdict(v).detail; })};
}

/// A failure kind's name, "" for none.
template <class T>
jf::Field<T> failure_field(std::optional<FailureKind> T::*member, Type type) {
  return Fields<T>::computed("failure", [member](const T& v) { return std::string(failure_kind_name(v.*member)); },
                             std::move(type));
}
}  // namespace

namespace json_fields {
Object<Metrics> describe(Tag<Metrics>) {
  using F = Fields<Metrics>;
  return Object<Metrics>(
      "metrics",
      {F::of("exact_kind", &Metrics::exact_kind, "integer/bool value: only mismatches count"),
       F::of("numel", &Metrics::numel).at_least(0), F::of("max_abs", &Metrics::max_abs),
       F::of("max_rel", &Metrics::max_rel, "max |x - ref| / |ref| over ref != 0"), F::of("rmse", &Metrics::rmse),
       F::of("max_ulp", &Metrics::max_ulp, "in ULPs of the node's working precision"),
       F::of("cosine", &Metrics::cosine), F::of("nan", &Metrics::nan).at_least(0),
       F::of("inf", &Metrics::inf).at_least(0), F::of("mismatches", &Metrics::mismatches).at_least(0),
       F::of("worst_index", &Metrics::worst_index), F::of("worst_value", &Metrics::worst_value),
       F::of("worst_reference", &Metrics::worst_reference),
       F::of("ref_rms", &Metrics::ref_rms, "sqrt(mean(ref^2)) over elements where both are finite: the value's scale"),
       F::of("ref_max_abs", &Metrics::ref_max_abs, "max |ref| over finite elements"),
       F::computed(
           "relative_rmse", [](const Metrics& m) { return m.exact_kind ? std::optional<double>() : relative_rmse(m); },
           "rmse / ref_rms: the error at the value's scale (null for exact kinds)"),
       F::of("unit_roundoff", &Metrics::unit_roundoff, finite_type(),
             "2^-(mantissa bits + 1) of the dtype ULPs are measured in (0 for exact kinds)")});
}

Object<DynamicDim> describe(Tag<DynamicDim>) {
  using F = Fields<DynamicDim>;
  return Object<DynamicDim>(
      "dynamic_dim", {F::of("input", &DynamicDim::input,
                            "the graph input ('x'), or in symbols the compile's name of the dim ('x.size(0)')"),
                      F::null_if_negative("dim", &DynamicDim::dim,
                                          "the dim of input; null for an int input holding a size, and in symbols"),
                      F::of("symbol", &DynamicDim::symbol, "the archive's symbol ('s77', '2*s77') or the compile's"),
                      F::of("min", &DynamicDim::min),
                      F::of("max", &DynamicDim::max, "null: unbounded, or a derived dim bounded by its symbols")});
}

Object<ShapeCompile> describe(Tag<ShapeCompile>) {
  using F = Fields<ShapeCompile>;
  return Object<ShapeCompile>(
      "shape_compile",
      {F::of("mode", &ShapeCompile::mode, one_of({"dynamic", "static"})),
       F::of("why_static", &ShapeCompile::why_static),
       F::of("dims", &ShapeCompile::dims, "the region inputs' dims the archive exported dynamic"),
       F::of("symbols", &ShapeCompile::symbols, "the compile's symbols and the range it assumed"),
       F::of("guards", &ShapeCompile::guards, "the guards the compile made, in the inputs' terms"),
       F::of("note", &ShapeCompile::note,
             "what a dynamic compile could not keep of the exported range (sizes past what it kept recompile); empty "
             "otherwise"),
       F::of("recompiles", &ShapeCompile::recompiles, "compiles past the first its runs caused").at_least(0)});
}

Object<ValueError> describe(Tag<ValueError>) {
  using F = Fields<ValueError>;
  auto compared = [](const ValueError& v) { return v.compared; };
  return Object<ValueError>(
      "", {F::of("name", &ValueError::name), F::of("dtype", &ValueError::dtype), F::of("shape", &ValueError::shape),
           F::of("compared", &ValueError::compared), F::of("local", &ValueError::local).only_when(compared),
           F::of("propagated", &ValueError::propagated).only_when(compared),
           F::of("compiled_local", &ValueError::compiled_local).only_when([](const ValueError& v) {
             return v.compared && v.has_compiled_local;
           })});
}

Object<NodeError> describe(Tag<NodeError>) {
  using F = Fields<NodeError>;
  return Object<NodeError>(
      "", {F::of("name", &NodeError::name), F::of("op", &NodeError::target, "aten.mm.default"),
           F::of("source", &NodeError::source,
                 "the user's line: file.py:39 in forward: <code>; a backward node's: gradient of NODE at file.py:39 in "
                 "forward: <code>"),
           F::of("module_path", &NodeError::module_path),
           F::of("backward_of", &NodeError::backward_of,
                 "in a training step's graph (docs/training.md), a backward node only: the forward node it is the "
                 "gradient of")
               .only_when([](const NodeError& n) { return !n.backward_of.empty(); }),
           F::of("local_ulp", &NodeError::local_ulp),
           F::null_if_negative("compiled_local_ulp", &NodeError::compiled_local_ulp, "null: no exploded compile"),
           F::of("values", &NodeError::values),
           F::of("local_relative", &NodeError::local_relative,
                 "the node's worst eager local relative_rmse over its values"),
           F::null_if_negative("compiled_local_relative", &NodeError::compiled_local_relative,
                               "the same for the compiled local error; null: no exploded compile"),
           F::computed(
               "compiled_vs_eager",
               [](const NodeError& n) {
                 return n.compiled_local_relative < 0 ? std::optional<double>() : n.compiled_vs_eager;
               },
               "the largest error_ratio of the compiled local to the eager local error over its values (what the "
               "ranking sorts by); null: no exploded compile")});
}

Object<OutputVerdict> describe(Tag<OutputVerdict>) {
  using F = Fields<OutputVerdict>;
  const Verdict& (*verdict)(const OutputVerdict&) = [](const OutputVerdict& o) -> const Verdict& { return o.verdict; };
  return Object<OutputVerdict>(
      "", join(join({F::of("name", &OutputVerdict::name), F::of("role", &OutputVerdict::role),
                     F::of("value", &OutputVerdict::value,
                           "present for a graph input the graph writes in place (name \"input 'x' after the graph\", "
                           "role user_input_mutation, buffer_mutation or parameter_mutation of it): the graph value "
                           "judged, \"x\"")
                         .only_when([](const OutputVerdict& v) { return v.written_input; }),
                     F::computed("pass", [](const OutputVerdict& v) { return v.verdict.pass; })},
                    reason_fields(verdict, reason_type())),
               join({F::of("compiled_to_fp64", &OutputVerdict::compiled_to_fp64),
                     F::of("eager_to_fp64", &OutputVerdict::eager_to_fp64)},
                    level_fields(verdict))));
}

Object<CompileRecord> describe(Tag<CompileRecord>) {
  using F = Fields<CompileRecord>;
  return Object<CompileRecord>(
      "",
      {F::of("what", &CompileRecord::what, one_of({"graph", "exploded", "instrumented"})),
       F::of("nodes", &CompileRecord::nodes), F::of("ok", &CompileRecord::ok),
       failure_field(&CompileRecord::failure, one_of({"", "compile_failed", "run_failed", "worker_died", "timed_out",
                                                      "unusable", "out_of_memory"})),
       F::of("message", &CompileRecord::message),
       F::of("compile_seconds", &CompileRecord::compile_seconds, finite_type()),
       F::of("run_seconds", &CompileRecord::run_seconds, finite_type()),
       F::of("worker_start_seconds", &CompileRecord::worker_start_seconds, finite_type()).at_least(0),
       F::of("shapes", &CompileRecord::shapes,
             "how the compile treated the graph's dynamic dims (docs/dynamic-shapes.md); null for a backend that does "
             "not say")});
}

Object<KernelBuffer> describe(Tag<KernelBuffer>) {
  using F = Fields<KernelBuffer>;
  auto judged = [](const KernelBuffer& b) { return b.judged; };
  const Verdict& (*verdict)(const KernelBuffer&) = [](const KernelBuffer& b) -> const Verdict& { return b.verdict; };
  std::vector<jf::Field<KernelBuffer>> fields = {
      F::of("buffer", &KernelBuffer::buffer),
      F::of("node", &KernelBuffer::node, "the exported node whose value it is; empty for an internal step"),
      F::of("part_of", &KernelBuffer::part_of),
      F::of("dtype", &KernelBuffer::dtype),
      F::of("shape", &KernelBuffer::shape),
      F::of("judged", &KernelBuffer::judged),
      F::of("nonfinite", &KernelBuffer::nonfinite).at_least(0),
      F::of("why_not", &KernelBuffer::why_not).only_when([](const KernelBuffer& b) { return !b.judged; }),
      F::of("value", &KernelBuffer::value).only_when(judged),
      F::of("reshaped", &KernelBuffer::reshaped).only_when(judged),
      F::of("pass", &KernelBuffer::pass).only_when(judged)};
  for (jf::Field<KernelBuffer>& f : reason_fields(verdict)) fields.push_back(std::move(f).only_when(judged));
  fields.push_back(F::of("metrics", &KernelBuffer::metrics).only_when(judged));
  return Object<KernelBuffer>("", std::move(fields));
}

Object<KernelCall> describe(Tag<KernelCall>) {
  using F = Fields<KernelCall>;
  return Object<KernelCall>(
      "", {F::of("name", &KernelCall::name, "cpp_fused_relu_0, extern_kernels.addmm, triton_poi_fused_add_0, ..."),
           F::of("nodes", &KernelCall::nodes, "exported nodes fused into the call, graph order"),
           F::of("fails", &KernelCall::fails), F::of("buffers", &KernelCall::buffers),
           F::computed(
               "has_code", [](const KernelCall& k) { return !k.code.empty(); },
               "the worker gave the kernel's generated source (none for extern kernels and ATen fallbacks)")});
}

Object<NonfiniteOrigin> describe(Tag<NonfiniteOrigin>) {
  using F = Fields<NonfiniteOrigin>;
  return Object<NonfiniteOrigin>(
      "", {F::of("kind", &NonfiniteOrigin::kind, one_of({"input", "model", "compiler", "compiled_code"})),
           F::of("kernel", &NonfiniteOrigin::kernel), F::of("node", &NonfiniteOrigin::node),
           F::of("detail", &NonfiniteOrigin::detail)});
}

/// The search inside the first failing kernel, with that kernel's code (a pair: the code lives on the kernel call).
struct KernelInside {
  const KernelCulprit& culprit;
  std::string code;
};

Object<KernelInside> describe(Tag<KernelInside>) {
  using F = Fields<KernelInside>;
  const KernelCulprit& (*culprit)(const KernelInside&) = [](const KernelInside& k) -> const KernelCulprit& {
    return k.culprit;
  };
  auto of = [culprit](const char* name, auto KernelCulprit::* member, std::string description = {}) {
    return F::of(name, culprit, member, std::move(description));
  };
  return Object<KernelInside>(
      "", {of("kind", &KernelCulprit::kind,
              "single_op: op fails compiled alone; fused: op fails only compiled after fused_with; inconclusive: the "
              "kernel's nodes from exact inputs pass")
               .typed(one_of({"single_op", "fused", "inconclusive"})),
           of("kernel", &KernelCulprit::kernel),
           of("nodes", &KernelCulprit::nodes, "the kernel's nodes searched, graph order, ending at the failing one"),
           of("op", &KernelCulprit::op, "the first node whose value fails; empty when inconclusive"),
           of("target", &KernelCulprit::target), of("source", &KernelCulprit::source),
           of("module_path", &KernelCulprit::module_path), of("fused_with", &KernelCulprit::fused_with),
           of("summary", &KernelCulprit::summary), of("compiles", &KernelCulprit::compiles),
           of("bound", &KernelCulprit::bound).at_least(1),
           of("seconds", &KernelCulprit::seconds, "the search's wall time").typed(finite_type()).at_least(0),
           of("code_file", &KernelCulprit::code_file,
              "the kernel's generated code saved beside the repro (--repro DIR); empty otherwise"),
           F::of("code", &KernelInside::code,
                 "the kernel's generated source (C++ or Triton); empty for an extern kernel")});
}

Object<KernelTable> describe(Tag<KernelTable>) {
  using F = Fields<KernelTable>;
  return Object<KernelTable>(
      "",
      {F::of("asked", &KernelTable::asked,
             "the run asked for it (off with --no-kernel-map; no whole-graph compile ran)"),
       F::of("available", &KernelTable::available),
       F::of("unavailable", &KernelTable::unavailable, "why there is no table, one line; empty when available"),
       F::of("observed", &KernelTable::observed), F::of("judged", &KernelTable::judged),
       F::of("observed_bytes", &KernelTable::observed_bytes).at_least(0),
       F::null_if_negative(
           "first_failing", &KernelTable::first_failing,
           "index into kernels of the first suspect: the kernel that wrote the failing buffer earliest in graph order")
           .at_least(0),
       F::of("first_failing_node", &KernelTable::first_failing_node),
       F::null_if_negative("first_nonfinite", &KernelTable::first_nonfinite,
                           "index into kernels of the first kernel call (call order) that wrote a NaN or Inf")
           .at_least(0),
       F::of(
           "nonfinite_origin", &KernelTable::nonfinite_origin,
           "where the compiled code's first NaN/Inf comes from: input (a graph input holds it), model (eager makes it "
           "too), compiler (the node compiled alone on finite inputs makes it), compiled_code (only the fused kernel "
           "makes it)"),
       F::computed(
           "inside",
           [](const KernelTable& t) -> std::optional<json> {
             if (!t.inside) return std::nullopt;
             // searched inside the first failing kernel (localize_kernel.cpp)
             const std::string code =
                 t.first_failing >= 0 ? t.kernels[static_cast<size_t>(t.first_failing)].code : std::string();
             return write_value(KernelInside{*t.inside, code});
           },
           object_of<KernelInside>().type().or_null(),
           "the op inside the first failing kernel: its nodes up to the failing one compiled as regions from "
           "fp64-exact inputs, bisected in at most 1 + ceil(log2 |nodes|) compiles; null when not searched (no "
           "failing kernel, no localization, a backend without regions)"),
       F::of("kernels", &KernelTable::kernels, "kernel calls in the order the compiled code made them")},
      "the kernel table: every buffer the whole graph's compiled code wrote, observed in the verdict's own compile and "
      "run, judged against the eager and fp64 values of the exported node it computes (docs/kernel-map.md)");
}

Object<Probe> describe(Tag<Probe>) {
  using F = Fields<Probe>;
  const Verdict& (*verdict)(const Probe&) = [](const Probe& p) -> const Verdict& { return p.verdict; };
  return Object<Probe>(
      "", join(join({F::computed(
                         "phase", [](const Probe& p) { return std::string(phase_name(p.phase)); },
                         names_of(phase_name, {Phase::FirstFailingEnd, Phase::LatestStart, Phase::Recheck})),
                     F::of("region", &Probe::region), F::computed("begin", [](const Probe& p) { return p.begin; }),
                     F::computed("end", [](const Probe& p) { return p.end; }), F::of("fails", &Probe::fails),
                     F::of("value", &Probe::value)},
                    reason_fields(verdict)),
               join({failure_field(&Probe::failure, string_type()), F::of("compiled", &Probe::compiled),
                     F::of("seconds", &Probe::seconds, finite_type())},
                    level_fields(verdict))));
}

Object<Culprit> describe(Tag<Culprit>) {
  using F = Fields<Culprit>;
  using C = Culprit::Conclusion;
  const Verdict& (*verdict)(const Culprit&) = [](const Culprit& c) -> const Verdict& { return c.verdict; };
  return Object<Culprit>(
      "",
      join(
          join({F::computed(
                    "kind", [](const Culprit& c) { return std::string(culprit_kind_name(c.kind)); },
                    names_of(culprit_kind_name, {Culprit::Kind::SingleOp, Culprit::Kind::Window, Culprit::Kind::Flaky,
                                                 Culprit::Kind::Inconclusive, Culprit::Kind::CompilerDecision})),
                F::computed(
                    "conclusion", [](const Culprit& c) { return std::string(culprit_conclusion_name(c.conclusion)); },
                    names_upto(culprit_conclusion_name, C::CompilerDecision),
                    "how the search ended, a stable code: named (a single_op or window culprit), or why none "
                    "was named"),
                F::of("summary", &Culprit::summary), F::of("nodes", &Culprit::nodes), F::of("ops", &Culprit::ops),
                F::of("sources", &Culprit::sources), F::of("module_paths", &Culprit::module_paths),
                F::of("value", &Culprit::value)},
               reason_fields(verdict)),
          join({F::of("compiled_to_fp64", &Culprit::compiled_to_fp64), F::of("eager_to_fp64", &Culprit::eager_to_fp64)},
               level_fields(verdict))));
}

Object<ReproArtifact> describe(Tag<ReproArtifact>) {
  using F = Fields<ReproArtifact>;
  return Object<ReproArtifact>(
      "", {F::of("what", &ReproArtifact::what,
                 one_of({"post_grad_graph", "output_code", "ir_post_fusion", "aot_graph", "runnable"})),
           F::of("path", &ReproArtifact::path)});
}

Object<Repro> describe(Tag<Repro>) {
  using F = Fields<Repro>;
  return Object<Repro>(
      "",
      {F::of("ok", &Repro::ok), F::of("archive", &Repro::archive), F::of("inputs", &Repro::inputs),
       F::of("command", &Repro::command, "one line that reproduces the verdict"), F::of("message", &Repro::message),
       F::of("test", &Repro::test,
             "DIR/test_repro.py: the window as a PyTorch unit test (plain PyTorch, no pt2diff), failing while the bug "
             "is there (docs/upstream.md); empty when not written"),
       F::of("test_message", &Repro::test_message, "why test_repro.py was not written; empty when it was"),
       F::of("artifacts", &Repro::artifacts,
             "DIR/inductor/: the compiler's own files for the window, from one compile with Inductor's debug trace "
             "(docs/upstream.md)"),
       F::of("artifacts_message", &Repro::artifacts_message,
             "why no artifacts were written (the compiled side is not Inductor, the traced compile failed); empty "
             "when they were")});
}

Object<Hint> describe(Tag<Hint>) {
  using F = Fields<Hint>;
  return Object<Hint>(
      "", {F::of("kind", &Hint::kind, hint_names(false)), F::of("finding", &Hint::finding, hint_names(true)),
           F::of("summary", &Hint::summary), F::of("suggestion", &Hint::suggestion),
           F::computed(
               "evidence",
               [](const Hint& h) {
                 json evidence = json::object();
                 for (const auto& [name, value] : h.evidence) evidence[name] = number(value);
                 return evidence;
               },
               Type{{{"type", "object"}, {"additionalProperties", number_type().schema}}},
               "the numbers behind the summary, by name"),
           F::of("notes", &Hint::notes,
                 "per-op facts behind the numbers: each op's dtype promotion, each reduction's length, each lever's "
                 "verdict")});
}

Object<Localization> describe(Tag<Localization>) {
  using F = Fields<Localization>;
  return Object<Localization>(
      "", {F::of("found_by", &Localization::found_by, one_of({"bisection", "node_evidence"}),
                 "bisection: the search from failing outputs; node_evidence: the outputs pass and the node verdict's "
                 "first finding is the culprit, with no search compile"),
           F::of("failing_outputs", &Localization::failing_outputs), F::of("cone_size", &Localization::cone_size),
           F::of("budget", &Localization::budget, "2*ceil(log2 cone_size)+4"),
           F::of("compiles", &Localization::compiles), F::of("seconds", &Localization::seconds, finite_type()),
           F::of("exploded_suspects", &Localization::exploded_suspects),
           F::of("exploded_agrees", &Localization::exploded_agrees), F::of("culprit", &Localization::culprit),
           F::of("probes", &Localization::probes), F::of("repro", &Localization::repro),
           F::of("hints", &Localization::hints,
                 "why the culprit diverges: each from an experiment (docs/usage.md, 'Hints')"),
           F::of("evidence", &Localization::evidence,
                 "how the kernel table, the node verdict and the compiler search stand to the culprit: agreeing, or which "
                 "evidence decides and why (docs/verdicts.md)")});
}

Object<CompilerDecision> describe(Tag<CompilerDecision>) {
  using F = Fields<CompilerDecision>;
  return Object<CompilerDecision>(
      "", {F::of("subsystem", &CompilerDecision::subsystem,
                 one_of({"post_grad_passes", "fusions", "lowerings", "joint_graph_passes", "pre_grad_passes"})),
           F::of("index", &CompilerDecision::index, "its place among the subsystem's decisions in the compile (0-based)"),
           F::of("what", &CompilerDecision::what, "\"pass NAME\", \"fusion of [nodes] with [nodes]\", \"lowering of OP\""),
           F::of("nodes", &CompilerDecision::nodes, "the exported nodes it touched (none for a pass)")});
}

Object<DecisionFilter> describe(Tag<DecisionFilter>) {
  using F = Fields<DecisionFilter>;
  return Object<DecisionFilter>(
      "", {F::of("subsystem", &DecisionFilter::subsystem, "whose decisions were off; empty: none (decisions recorded only)"),
           F::of("limit", &DecisionFilter::limit, "from this index on, off; -1: no limit"),
           F::of("skip", &DecisionFilter::skip, "these indexes off"),
           F::of("skip_what", &DecisionFilter::skip_what, "these decisions off wherever they come (by what they are)")});
}

Object<CompilerSearchStep> describe(Tag<CompilerSearchStep>) {
  using F = Fields<CompilerSearchStep>;
  return Object<CompilerSearchStep>(
      "", {F::of("off", &CompilerSearchStep::off), F::of("passes", &CompilerSearchStep::passes),
           F::of("detail", &CompilerSearchStep::detail),
           F::of("decisions", &CompilerSearchStep::decisions, "decisions of that subsystem the compile took"),
           F::of("seconds", &CompilerSearchStep::seconds, finite_type())});
}

Object<CompilerSearch> describe(Tag<CompilerSearch>) {
  using F = Fields<CompilerSearch>;
  using C = CompilerSearch::Conclusion;
  return Object<CompilerSearch>(
      "", {F::computed(
               "conclusion", [](const CompilerSearch& c) { return std::string(compiler_search_conclusion_name(c.conclusion)); },
               names_of(compiler_search_conclusion_name,
                        {C::Found, C::NotReproduced, C::NoSubsystem, C::BudgetExhausted, C::CompilerLost, C::Unavailable}),
               "how the search ended, a stable code"),
           F::of("why", &CompilerSearch::why, "what started it"), F::of("summary", &CompilerSearch::summary),
           F::of("decision", &CompilerSearch::decision, "the culprit decision; null unless found"),
           F::of("ops", &CompilerSearch::ops), F::of("sources", &CompilerSearch::sources),
           F::of("module_paths", &CompilerSearch::module_paths),
           F::of("verified", &CompilerSearch::verified, "one compile with only this decision off passed the rule"),
           F::of("verification", &CompilerSearch::verification),
           F::of("workaround", &CompilerSearch::workaround, "a Python line a user adds today, with what one compile with it showed"),
           F::of("workaround_verified", &CompilerSearch::workaround_verified),
           F::of("steps", &CompilerSearch::steps, "each compile of the search, in order"),
           F::of("compiles", &CompilerSearch::compiles), F::of("seconds", &CompilerSearch::seconds, finite_type())});
}

Object<EagerNode> describe(Tag<EagerNode>) {
  using F = Fields<EagerNode>;
  return Object<EagerNode>(
      "", {F::of("node", &EagerNode::node), F::of("op", &EagerNode::op), F::of("source", &EagerNode::source),
           F::of("module_path", &EagerNode::module_path), F::of("module_type", &EagerNode::module_type)});
}

Object<EagerLever> describe(Tag<EagerLever>) {
  using F = Fields<EagerLever>;
  return Object<EagerLever>(
      "", {F::computed(
               "kind",
               [](const EagerLever& l) {
                 return std::string(l.kind == EagerLever::Kind::Module ? "module" : "source_line");
               },
               one_of({"module", "source_line"})),
           F::of("module_path", &EagerLever::module_path), F::of("module_type", &EagerLever::module_type),
           F::of("source", &EagerLever::source), F::of("nodes", &EagerLever::nodes)});
}

Object<Workaround> describe(Tag<Workaround>) {
  using F = Fields<Workaround>;
  using C = Workaround::Conclusion;
  return Object<Workaround>(
      "", {F::computed(
               "conclusion", [](const Workaround& w) { return std::string(workaround_conclusion_name(w.conclusion)); },
               names_of(workaround_conclusion_name,
                        {C::Found, C::NotNeeded, C::EagerFails, C::BudgetExhausted, C::CompilerLost, C::Unavailable}),
               "how the search ended, a stable code"),
           F::of("summary", &Workaround::summary),
           F::of("candidates", &Workaround::candidates, "nodes the search could leave eager (every node of the graph)"),
           F::of("nodes", &Workaround::nodes, "the eager set, graph order"),
           F::of("minimal", &Workaround::minimal,
                 "each node of the set was needed when the search tried to compile it again"),
           F::of("compiles", &Workaround::compiles, "compiles of the search, the verification included"),
           F::of("seconds", &Workaround::seconds, finite_type()), F::of("levers", &Workaround::levers),
           F::of("lines", &Workaround::lines, "the Python lines a user adds to their program (comments start with #)"),
           F::of("verified", &Workaround::verified,
                 "one more compile, leaving eager exactly what the lines leave eager, passed the rule"),
           F::of("verified_nodes", &Workaround::verified_nodes), F::of("worst_output", &Workaround::worst_output),
           F::of("verification", &Workaround::verification)});
}

/// A finding's other nodes with their ratios, as {node, ratio} pairs.
struct AlsoNode {
  std::string node;
  double ratio = 0;
};

Object<AlsoNode> describe(Tag<AlsoNode>) {
  using F = Fields<AlsoNode>;
  return Object<AlsoNode>("", {F::of("node", &AlsoNode::node), F::of("ratio", &AlsoNode::ratio)});
}

Object<NodeFinding> describe(Tag<NodeFinding>) {
  using F = Fields<NodeFinding>;
  return Object<NodeFinding>(
      "", {F::of("node", &NodeFinding::node, "the first node in graph order with this op and shape that stands out"),
           F::of("op", &NodeFinding::op), F::of("source", &NodeFinding::source),
           F::of("module_path", &NodeFinding::module_path), F::of("value", &NodeFinding::value),
           F::of("dtype", &NodeFinding::dtype), F::of("shape", &NodeFinding::shape),
           F::computed(
               "level", [](const NodeFinding& f) { return std::string(level_name(f.level)); },
               names_of(level_name, {Level::Suspicious, Level::Fail})),
           F::of("ratio", &NodeFinding::ratio,
                 "compiled local RMSE to fp64 / max(eager local RMSE, unit roundoff x RMS(fp64))"),
           F::of("roundoffs", &NodeFinding::roundoffs, "compiled local RMSE in units of unit roundoff x RMS(fp64)"),
           F::of("eager_local", &NodeFinding::eager_local), F::of("compiled_local", &NodeFinding::compiled_local),
           F::computed(
               "also",
               [](const NodeFinding& f) {
                 std::vector<AlsoNode> also;
                 for (size_t i = 0; i < f.also.size(); ++i) also.push_back({f.also[i], f.also_ratios[i]});
                 return also;
               },
               "other nodes with the same op and shape that stand out too (graph order)"),
           F::of("kernels", &NodeFinding::kernels,
                 "the kernel calls of the whole graph's compiled code that compute this node (the kernel table); empty "
                 "without a kernel map")});
}

Object<NodeConfirmation> describe(Tag<NodeConfirmation>) {
  using F = Fields<NodeConfirmation>;
  return Object<NodeConfirmation>(
      "", {F::of("conclusion", &NodeConfirmation::conclusion,
                 one_of({"confirmed", "invisible_at_outputs", "not_confirmed", "unavailable", "compiler_failed"})),
           F::of("eager", &NodeConfirmation::eager, "the nodes left eager"),
           F::of("output", &NodeConfirmation::output, "the output with the worst error ratio in the run's own compile"),
           F::of("before", &NodeConfirmation::before), F::of("after", &NodeConfirmation::after),
           F::computed(
               "bound", [](const NodeConfirmation&) { return kNodeConfirmBound; }, finite_type(),
               "the error ratio the outputs must come back within"),
           F::of("compiles", &NodeConfirmation::compiles), F::of("seconds", &NodeConfirmation::seconds, finite_type()),
           F::of("summary", &NodeConfirmation::summary)});
}

/// The node verdict with the two ratios it was judged at (they live on the run's tolerance rule).
struct NodeVerdictAt {
  const NodeVerdict& verdict;
  const ToleranceRule& rule;
};

Object<NodeVerdictAt> describe(Tag<NodeVerdictAt>) {
  using F = Fields<NodeVerdictAt>;
  const NodeVerdict& (*verdict)(const NodeVerdictAt&) = [](const NodeVerdictAt& n) -> const NodeVerdict& {
    return n.verdict;
  };
  auto of = [verdict](const char* name, auto NodeVerdict::* member, std::string description = {}) {
    return F::of(name, verdict, member, std::move(description));
  };
  return Object<NodeVerdictAt>(
      "",
      {of("available", &NodeVerdict::available, "the exploded compile ran and gave compiled local errors"),
       of("unavailable", &NodeVerdict::unavailable, "why not (or why the verdict is off); empty otherwise"),
       F::computed(
           "level", [](const NodeVerdictAt& n) { return std::string(level_name(n.verdict.level)); }, level_type()),
       of("judged", &NodeVerdict::judged, "floating values judged"),
       of("worst_ratio", &NodeVerdict::worst_ratio,
          "the largest compiled/eager local error ratio over every judged value"),
       of("worst_node", &NodeVerdict::worst_node),
       F::computed(
           "node_ratio", [](const NodeVerdictAt& n) { return n.rule.node_ratio; }, finite_type()),
       F::computed(
           "node_fail_ratio", [](const NodeVerdictAt& n) { return n.rule.node_fail_ratio; }, finite_type()),
       of("findings", &NodeVerdict::findings),
       of("confirmation", &NodeVerdict::confirmation,
          "one compile of the whole graph with every finding's nodes eager (when localization ran): does the outputs' "
          "error go back to eager's?")},
      "every node's compiled local error (the exploded compile) judged against eager's local error on the same "
      "fp64-exact inputs (docs/verdicts.md, 'Node evidence'); no compile of its own");
}

Object<ToleranceRule> describe(Tag<ToleranceRule>) {
  using F = Fields<ToleranceRule>;
  return Object<ToleranceRule>(
      "", {F::computed(
               "rule", [](const ToleranceRule& r) { return rule_name(r); },
               "same, allclose, ulp:N, cosine:C, relative (--rule)"),
           F::of("tol", &ToleranceRule::tol, finite_type()),
           F::of("fp32_multiplier", &ToleranceRule::fp32_multiplier, finite_type()),
           F::of("low_precision_multiplier", &ToleranceRule::low_precision_multiplier, finite_type()),
           F::of("small_tensor_multipliers", &ToleranceRule::small_tensor_multipliers),
           F::of("suspicious_ratio", &ToleranceRule::suspicious_ratio, finite_type(),
                 "--suspicious-ratio (0: never suspicious)")
               .at_least(0),
           F::of("node_ratio", &ToleranceRule::node_ratio, finite_type(),
                 "--node-ratio: a node whose compiled local error is at least this many times eager's (floored at its "
                 "dtype's rounding) makes the run at least suspicious (0: the node verdict is off; docs/verdicts.md, "
                 "'Node evidence')")
               .at_least(0),
           F::of("node_fail_ratio", &ToleranceRule::node_fail_ratio, finite_type(),
                 "--node-fail-ratio: such a node at least this many times eager's makes the run fail (0: never on node "
                 "evidence alone)")
               .at_least(0)});
}

Object<StageRecord> describe(Tag<StageRecord>) {
  using F = Fields<StageRecord>;
  return Object<StageRecord>(
      "",
      {F::of("name", &StageRecord::name,
             "the stage: plan_run, run_references, compile_exploded_ahead (only when --overlap ran the exploded "
             "compile after run_references, beside the whole graph's), compile_graph, judge_outputs, judge_kernels, "
             "compile_exploded, ..."),
       F::of("seconds", &StageRecord::seconds, finite_type(),
             "its wall time, with the compiles started ahead of their own stage (--overlap)"),
       F::of("peak_gpu_bytes", &StageRecord::peak_gpu_bytes,
             "the most the engine's GPU allocations held during the stage; -1 on the CPU"),
       F::of("host_bytes", &StageRecord::host_bytes,
             "the engine process's resident memory when the stage ended (Linux VmRSS); -1 where unknown")});
}

Object<RunDevices> describe(Tag<RunDevices>) {
  using F = Fields<RunDevices>;
  return Object<RunDevices>(
      "",
      {F::of("native", &RunDevices::native, "the eager (native dtypes), local and region runs: 'cpu', 'cuda:0'"),
       F::of("reference", &RunDevices::reference, "the fp64 reference run"),
       F::of("why", &RunDevices::why, "how the reference device was chosen; empty for a CPU run"),
       F::of("peak_gpu_bytes", &RunDevices::peak_gpu_bytes,
             "most bytes torch's caching allocator held on the GPU during the diff; -1 on the CPU"),
       F::of("start_host_bytes", &RunDevices::start_host_bytes,
             "the engine process's resident memory when the diff started (program and inputs loaded; Linux VmRSS); -1 "
             "where unknown"),
       F::of("peak_host_bytes", &RunDevices::peak_host_bytes,
             "the most resident memory the engine process has had since it started (Linux VmHWM; the workers are other "
             "processes); -1 where unknown")},
      "where pt2diff's own runs executed (--device, --reference-device)");
}

Object<DiffResult> describe(Tag<DiffResult>) {
  using F = Fields<DiffResult>;
  return Object<DiffResult>(
      "",
      {F::computed(
           "schema_version", [](const DiffResult&) { return 1; }, Type{{{"const", 1}}}),
       F::of("graph", &DiffResult::graph),
       F::of("inputs", &DiffResult::inputs, "inputs file, 'sample inputs' or 'random (seed N)'"),
       F::of("compiled", &DiffResult::compiled,
             "what played the compiled side: 'inductor (cpu)', 'eager', 'aoti: m.pt2', 'external: CMD', 'fault: ...'"),
       F::of("devices", &DiffResult::devices),
       F::of("tolerance", &DiffResult::rule),
       F::computed(
           "verdict",
           [](const DiffResult& r) {
             bool graph_failed = false;
             for (const CompileRecord& c : r.compiles) graph_failed = graph_failed || (c.what == "graph" && !c.ok);
             return std::string(graph_failed ? "compiler_failed" : r.diverged ? "diverged" : "agree");
           },
           one_of({"agree", "diverged", "compiler_failed"}),
           "compiler_failed: the whole-graph compile or run failed, so no output has a compiled value"),
       F::computed(
           "level", [](const DiffResult& r) { return std::string(level_name(result_level(r))); }, level_type(),
           "fail: an output fails or the compiler failed; suspicious: no output fails and one is suspicious; pass"),
       F::of("suspicious", &DiffResult::suspicious, "some output is suspicious"),
       F::of("fail_on_suspicious", &DiffResult::fail_on_suspicious,
             "--fail-on-suspicious: suspicious outputs count as failing (exit code 1)"),
       F::computed(
           "fails", [](const DiffResult& r) { return counts_as_failing(r); },
           "the run counts as failing (the CLI's exit code 1, testing.h and assert_agrees): level fail, or "
           "suspicious with fail_on_suspicious"),
       F::computed(
           "node_verdict", [](const DiffResult& r) { return write_value(NodeVerdictAt{r.node_verdict, r.rule}); },
           object_of<NodeVerdictAt>().type()),
       F::of("compiled_failed", &DiffResult::compiled_failed, "some compile or compiled run failed (see compiles)"),
       F::of("compiles", &DiffResult::compiles, "every compile the run asked for, in order"),
       F::of("stages", &DiffResult::stages,
             "the main job's pipeline stages in order (engine/diff/stages.h), each one's wall time and memory: where a "
             "run's time and memory go; empty from explain()"),
       F::of("kernels", &DiffResult::kernels),
       F::of("localization", &DiffResult::localization,
             "null unless an output diverged and localization ran, or the outputs pass and the node verdict named a "
             "culprit (docs/usage.md, 'Localization'; docs/verdicts.md, 'Node evidence')"),
       F::of("workaround", &DiffResult::workaround,
             "null unless --workaround asked for the smallest eager set (docs/workaround.md)"),
       F::of("compiler_search", &DiffResult::compiler_search,
             "null unless the compiler's decisions were searched: only the whole graph compiled together diverges, or "
             "--search-compiler (docs/compiler-search.md)"),
       F::of("outputs", &DiffResult::outputs),
       F::computed(
           "ranking",
           [](const DiffResult& r) {
             std::vector<std::string> names;
             for (size_t i : r.ranking) names.push_back(r.nodes[i].name);
             return names;
           },
           "node names, most compiled_vs_eager first, then most compiled_local_relative (without an exploded "
           "compile: most local_relative)"),
       F::of("nodes", &DiffResult::nodes, "every node in topological order"),
       F::of("fp64_fixups", &DiffResult::fixups),
       F::of(
           "autocast", &DiffResult::autocast,
           "torch.autocast regions (wrap_with_autocast nodes): eager ran their bodies under autocast, fp64 ignored its "
           "casts"),
       F::of("not_comparable", &DiffResult::not_comparable),
       F::of("random_nodes", &DiffResult::random_nodes,
             "nodes drawing random numbers; every run of them starts from the same generator state"),
       F::of("warnings", &DiffResult::warnings,
             "what limits this report, one line each (in-place mutation: no exploded compile, no localization)"),
       F::of("seconds", &DiffResult::seconds, finite_type()),
       F::of(
           "eager_nonfinite", &DiffResult::eager_nonfinite,
           "a training step (docs/training.md) whose eager loss or gradient is not finite: the output, the first node "
           "whose eager value is not, what to do (the CLI exits 2); absent otherwise")
           .only_when([](const DiffResult& r) { return !r.eager_nonfinite.empty(); })});
}
}  // namespace json_fields

std::string shapes_to_json(const ShapeCompile& shapes) { return jf::write_value(shapes).dump(); }

std::string hints_to_json(const std::vector<Hint>& hints) { return jf::write_value(hints).dump(2) + "\n"; }

std::string to_json(const DiffResult& r) { return jf::write_value(r).dump(2) + "\n"; }

std::string report_json_schema() {
  return jf::document_schema("pt2diff report (pt2diff GRAPH INPUTS --json FILE), generated from engine/report/json_report.cpp",
                             jf::object_of<DiffResult>())
             .dump(2) +
         "\n";
}

}  // namespace pt2diff
