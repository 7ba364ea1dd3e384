// engine/diff.cpp — implements diff.h: load → IR → runs → comparison → report.
#include "pt2diff/diff.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/hints/hint_context.h"
#include "engine/localize/compiled_oracle.h"
#include "engine/report/repro_writer.h"
#include "graphs/graph_text.h"
#include "pt2diff/error.h"
#include "pt2diff/interpreter.h"

namespace pt2diff {

namespace {

std::string shape_of(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

/// The precision a node works in: the coarsest floating dtype among its tensor inputs and outputs
/// (fewest mantissa bits). ULPs in it make a bf16 → fp32 cast score like the bf16 value it carries.
std::optional<at::ScalarType> working_dtype(const Graph& g, const Node& n) {
  auto bits = [](DType d) {
    switch (d) {
      case DType::Float8_e5m2: case DType::Float8_e5m2fnuz: return 2;
      case DType::Float8_e4m3fn: case DType::Float8_e4m3fnuz: return 3;
      case DType::BFloat16: return 7;
      case DType::Half: return 10;
      case DType::Float: return 23;
      case DType::Double: return 52;
      default: return 1000;
    }
  };
  std::optional<DType> coarsest;
  auto consider = [&](ValueId v) {
    const Value& value = g.value(v);
    if (value.meta && is_floating(value.meta->dtype) && (!coarsest || bits(value.meta->dtype) < bits(*coarsest)))
      coarsest = value.meta->dtype;
  };
  for (ValueId v : n.input_values()) consider(v);
  for (ValueId v : n.output_values()) consider(v);
  if (!coarsest) return std::nullopt;
  return static_cast<at::ScalarType>(static_cast<int8_t>(*coarsest));
}

/// Errors of one defined value; tensors only (sym scalars are exact by construction).
ValueError value_error(const Graph& g, ValueId v, const c10::IValue& native, const c10::IValue& fp64, const c10::IValue& local,
                       std::optional<at::ScalarType> ulp_dtype) {
  ValueError e;
  e.name = g.value(v).name;
  if (!native.isTensor() || !fp64.isTensor() || !local.isTensor()) {
    e.compared = false;
    return e;
  }
  const at::Tensor& n = native.toTensor();
  e.dtype = std::string(dtype_name(static_cast<DType>(n.scalar_type())));
  e.shape = shape_of(n);
  e.propagated = measure(n, fp64.toTensor(), ulp_dtype);
  e.local = measure(local.toTensor(), fp64.toTensor(), ulp_dtype);
  return e;
}

OutputVerdict no_compiled_value(OutputVerdict ov, const std::string& why) {
  ov.verdict.pass = false;
  ov.verdict.reason = "no_compiled_value";
  ov.verdict.detail = why;
  return ov;
}

/// What running a GPU export on the CPU changes, grouped by kind: "device cuda:0 -> cpu: arange, full".
std::string cpu_run_warning(const Program& program, const std::vector<DeviceRewrite>& rewrites) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_kind;
  for (const DeviceRewrite& rw : rewrites) {
    auto it = std::find_if(by_kind.begin(), by_kind.end(), [&](const auto& k) { return k.first == rw.what; });
    if (it == by_kind.end()) it = by_kind.insert(by_kind.end(), {rw.what, {}});
    it->second.push_back(rw.node);
  }
  std::vector<std::string> kinds;
  for (const auto& [what, nodes] : by_kind) kinds.push_back(fmt::format("{} ({})", what, fmt::join(nodes, ", ")));
  return fmt::format("the graph was exported on {}; pt2diff's eager and fp64 runs are on the CPU, so eager is CPU eager "
                     "(close to, not bit for bit, {} eager){}{}", program.export_device.str(), program.export_device.type,
                     kinds.empty() ? "" : "; run differently there: ", fmt::join(kinds, "; "));
}

/// Compiles and runs one region, recording how it went; nullopt when the backend failed.
std::optional<std::vector<c10::IValue>> compile_and_run(Backend& backend, const RegionSpec& region,
                                                        const std::vector<c10::IValue>& inputs, const std::string& what,
                                                        DiffResult& r) {
  CompileRecord rec;
  rec.what = what;
  rec.nodes = region.nodes.size();
  std::optional<std::vector<c10::IValue>> outputs;
  try {
    auto compiled = backend.compile(region, inputs);
    rec.compile_seconds = backend.last_compile_seconds();
    outputs = compiled->run(inputs);
    rec.run_seconds = compiled->last_run_seconds();
    rec.ok = true;
  } catch (const BackendFailure& f) {
    rec.failure = f.kind_name();
    rec.message = f.what();
    r.compiled_failed = true;
  }
  r.compiles.push_back(std::move(rec));
  return outputs;
}

/// The graph inputs of the reference runs (an upcast input rounds back to itself).
ReferenceRuns start_reference(const Program& program, const BoundInputs& inputs) {
  ReferenceRuns reference;
  reference.eager = graph_input_values(program, inputs);
  reference.rounded = reference.eager;
  reference.fp64.resize(program.ir.graph.values().size());
  return reference;
}

/// Keeps a lockstep step's values: eager, fp64, and fp64 rounded to the native dtype. `copy` when a
/// later op may mutate them in place.
void keep_reference(const NodeStep& step, ReferenceRuns& reference, bool copy) {
  auto kept = [copy](const c10::IValue& v) { return copy && v.isTensor() ? c10::IValue(v.toTensor().clone()) : v; };
  const auto outs = step.node.output_values();
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t v = static_cast<size_t>(outs[i]);
    reference.eager[v] = kept(step.native[i]);
    reference.fp64[v] = kept(step.fp64[i]);
    reference.rounded[v] = step.fp64[i].isTensor() && step.native[i].isTensor()
                               ? c10::IValue(reference.fp64[v].toTensor().to(step.native[i].toTensor().scalar_type()))
                               : reference.eager[v];
  }
}

/// The hint experiments on a named culprit (engine/hints/). A compiler failure here costs the hints,
/// never the report.
std::vector<Hint> explain_culprit(const Program& program, const Interpreter& interpreter, Backend& backend, const Culprit& culprit,
                                  const ReferenceRuns& reference, const std::vector<std::string>& random_nodes,
                                  const DiffOptions& options) {
  const Graph& g = program.ir.graph;
  std::vector<NodeId> nodes;
  for (const std::string& name : culprit.nodes)
    for (const Node& n : g.nodes())
      if (n.name == name) nodes.push_back(n.id);
  if (nodes.empty()) return {};
  HintContext ctx{program, interpreter, options, RegionSpec::fused(g, nodes, g.node(nodes.back()).output_values()), {}, {}, {}, {}, 0, {}};
  for (ValueId v : ctx.window.inputs) ctx.inputs.push_back(reference.rounded[static_cast<size_t>(v)]);
  for (const std::string& name : culprit.nodes)
    if (std::find(random_nodes.begin(), random_nodes.end(), name) != random_nodes.end()) ctx.random_nodes.push_back(name);
  for (size_t i = 0; i < ctx.window.outputs.size(); ++i)
    if (g.value(ctx.window.outputs[i]).name == culprit.value) ctx.judged = i;
  const c10::IValue& fp64 = reference.fp64[static_cast<size_t>(ctx.window.outputs.at(ctx.judged))];
  const c10::IValue eager = interpreter.run_region(ctx.window, ctx.inputs).at(ctx.judged);
  if (!fp64.isTensor() || !eager.isTensor()) return {};
  ctx.fp64 = fp64.toTensor();
  ctx.eager = eager.toTensor();
  try {
    const c10::IValue compiled = backend.compile(ctx.window, ctx.inputs)->run(ctx.inputs).at(ctx.judged);
    if (!compiled.isTensor()) return {};
    ctx.compiled = compiled.toTensor();
  } catch (const BackendFailure&) {
    return {};
  }
  std::vector<Hint> hints;
  for (auto experiment : {dtype_promotion_hint, reduction_order_hint, compiler_lever_hint})
    if (auto h = experiment(ctx)) hints.push_back(std::move(*h));
  return hints;
}

}  // namespace

std::vector<Hint> explain(const Program& program, const BoundInputs& inputs, const std::string& first, const DiffOptions& options,
                          const std::string& last) {
  const Graph& g = program.ir.graph;
  auto find = [&](const std::string& name) -> const Node& {
    for (const Node& n : g.nodes())
      if (n.name == name) return n;
    throw Error(Error::Kind::Usage, fmt::format("no node named '{}' in {} (see pt2diff inspect --graph)", name, program.path));
  };
  const Node& begin = find(first);
  const Node& end = last.empty() ? begin : find(last);
  if (end.id < begin.id)
    throw Error(Error::Kind::Usage, fmt::format("the window's last node '{}' comes before its first '{}' in graph order", end.name, begin.name));
  // The window: the nodes from `first` to `last` that `last` depends on.
  std::set<NodeId> needed = {end.id};
  for (NodeId id = end.id; id >= begin.id && id != kGraphInput; --id) {
    if (!needed.count(id)) continue;
    for (ValueId v : g.node(id).input_values())
      if (NodeId p = g.value(v).producer; p != kGraphInput && p >= begin.id) needed.insert(p);
    if (id == 0) break;
  }
  std::unique_ptr<Backend> backend = make_backend(options.compiled, program, options.backend);
  Interpreter interpreter(program);
  interpreter.set_seed(options.backend.seed);
  ReferenceRuns reference = start_reference(program, inputs);
  const bool copy_kept = interpreter.mutates_inputs();  // scans every kernel: once, not per node
  LockstepResult runs = interpreter.run_lockstep(inputs, [&](const NodeStep& step) { keep_reference(step, reference, copy_kept); });
  Culprit culprit;
  for (NodeId id : needed) culprit.nodes.push_back(g.node(id).name);
  for (ValueId v : end.output_values())
    if (reference.fp64[static_cast<size_t>(v)].isTensor()) {
      culprit.value = g.value(v).name;
      break;
    }
  return explain_culprit(program, interpreter, *backend, culprit, reference, runs.native.random_nodes, options);
}

namespace {
DiffResult run_diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend,
                    const std::shared_ptr<std::string>& step);
}  // namespace

DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options) {
  // Progress lines during localization say which probe a compile belongs to.
  auto step = std::make_shared<std::string>();
  BackendOptions backend_options = options.backend;
  if (options.backend.on_wait)
    backend_options.on_wait = [step, user = options.backend.on_wait](const std::string& activity, double elapsed) {
      user(step->empty() ? activity : "[" + *step + "] " + activity, elapsed);
    };
  std::unique_ptr<Backend> backend = make_backend(options.compiled, program, backend_options);
  return run_diff(program, inputs, options, *backend, step);
}

DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend) {
  return run_diff(program, inputs, options, backend, std::make_shared<std::string>());
}

namespace {

DiffResult run_diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend_ref,
                    const std::shared_ptr<std::string>& step) {
  const auto start = std::chrono::steady_clock::now();
  const Graph& g = program.ir.graph;
  Backend* backend = &backend_ref;
  DiffResult r;
  r.graph = program.path;
  r.inputs = inputs.origin;
  r.compiled = backend->name();
  r.rule = options.rule;

  Interpreter interpreter(program);
  interpreter.set_seed(options.backend.seed);  // the compiled side is seeded alike, every run
  // Per-op inputs (exploded compile, localization windows) assume each value is written once; an op
  // mutating values in place breaks that, so only whole-graph verdicts are given.
  const bool in_place = interpreter.mutates_inputs();
  if (in_place)
    r.warnings.push_back("an op in this graph mutates values in place (a custom op in a training-IR graph): the exploded compile "
                         "and localization are skipped; export the core ATen graph (ep.run_decompositions(), where mutation "
                         "is functional: auto_functionalized) to localize");
  if (program.export_device.type != "cpu") r.warnings.push_back(cpu_run_warning(program, interpreter.device_rewrites()));
  const bool exploded = options.exploded && backend->compiles_regions() && !in_place;
  const bool bisect = options.localize.enabled && !in_place;
  const bool keep = exploded || (bisect && backend->compiles_regions());
  // Every value of the eager and fp64 runs, for the exploded compile and the localization probes.
  ReferenceRuns reference;
  if (keep) reference = start_reference(program, inputs);
  const bool copy_kept = in_place;
  LockstepResult runs = interpreter.run_lockstep(inputs, [&](const NodeStep& step) {
    NodeError ne;
    ne.name = step.node.name;
    ne.target = short_target(step.node.target);
    ne.source = step.node.source.user_frame();
    ne.module_path = step.node.source.module_path();
    auto outs = step.node.output_values();
    const auto ulp_dtype = working_dtype(g, step.node);
    for (size_t i = 0; i < outs.size(); ++i) {
      ne.values.push_back(value_error(g, outs[i], step.native[i], step.fp64[i], step.local[i], ulp_dtype));
      if (options.keep_values && ne.values.back().compared) {
        ne.values.back().eager_value = step.native[i].toTensor();
        ne.values.back().fp64_value = step.fp64[i].toTensor();
        ne.values.back().local_value = step.local[i].toTensor();
      }
    }
    if (keep) keep_reference(step, reference, copy_kept);
    r.nodes.push_back(std::move(ne));
  });
  r.fixups = runs.fp64.fixups;
  r.not_comparable = runs.fp64.not_comparable;
  r.random_nodes = runs.native.random_nodes;
  // Bitcasts and float8 have no fp64 meaning: their values are shown, never scored.
  std::set<std::string> uncomparable_values;
  for (NodeError& ne : r.nodes) {
    const bool skip = std::find(r.not_comparable.begin(), r.not_comparable.end(), ne.name) != r.not_comparable.end();
    for (ValueError& ve : ne.values) {
      if (skip) {
        ve.compared = false;
        uncomparable_values.insert(ve.name);
      }
      if (ve.compared && !ve.local.exact_kind) ne.local_ulp = std::max(ne.local_ulp, ve.local.max_ulp);
    }
  }

  // The whole graph through the compiler, fed the same inputs as eager.
  const RegionSpec whole = RegionSpec::whole_graph(program.ir);
  const std::vector<c10::IValue> input_values = graph_input_values(program, inputs);
  std::vector<c10::IValue> whole_inputs;
  for (ValueId v : whole.inputs) whole_inputs.push_back(input_values[static_cast<size_t>(v)]);
  auto compiled = compile_and_run(*backend, whole, whole_inputs, "graph", r);

  for (size_t i = 0; i < program.ir.output_specs.size(); ++i) {
    const OutputSpec& spec = program.ir.output_specs[i];
    OutputVerdict ov;
    auto values = spec.arg.values();
    ov.name = values.empty() ? fmt::format("output #{}", i) : g.value(values.front()).name;
    ov.role = std::string(output_kind_name(spec.kind)) + (spec.target.empty() ? "" : " of " + spec.target);
    const c10::IValue& eager = runs.native.outputs[i];
    const c10::IValue& fp64 = runs.fp64.outputs[i];
    if (!eager.isTensor()) continue;
    ov.eager_value = eager.toTensor();
    if (fp64.isTensor()) ov.fp64_value = fp64.toTensor();
    const bool fp64_ok = fp64.isTensor() && !uncomparable_values.count(ov.name);
    NodeId producer = values.empty() ? kGraphInput : g.value(values.front()).producer;
    auto ulp_dtype = producer == kGraphInput ? std::nullopt : working_dtype(g, g.node(producer));
    if (fp64_ok) ov.eager_to_fp64 = measure(eager.toTensor(), fp64.toTensor(), ulp_dtype);
    c10::IValue result;
    if (compiled && !values.empty()) {
      auto at = std::find(whole.outputs.begin(), whole.outputs.end(), values.front());
      if (at != whole.outputs.end()) result = (*compiled)[static_cast<size_t>(at - whole.outputs.begin())];
    }
    if (!compiled) {
      ov = no_compiled_value(std::move(ov), r.compiles.back().message);
    } else if (!result.isTensor()) {
      ov = no_compiled_value(std::move(ov), fmt::format("{} does not return this output", r.compiled));
    } else {
      ov.compiled_value = result.toTensor();
      ov.verdict = judge(result.toTensor(), eager.toTensor(), fp64_ok ? fp64.toTensor() : at::Tensor(), options.rule);
      if (fp64_ok) ov.compiled_to_fp64 = measure(result.toTensor(), fp64.toTensor(), ulp_dtype);
    }
    r.diverged = r.diverged || !ov.verdict.pass;
    r.outputs.push_back(std::move(ov));
  }

  // Every op on its own through the compiler, fed the fp64 values of its inputs rounded to their
  // dtypes (the eager local run's inputs): the compiled local error of every node, in one compile.
  // A worker that hung, died twice or cannot run here at all is not asked again.
  const std::string last_failure = r.compiles.empty() ? "" : r.compiles.back().failure;
  const bool worker_lost = last_failure == "timed_out" || last_failure == "worker_died" || last_failure == "unusable";
  if (exploded && !worker_lost && !g.nodes().empty()) {
    std::vector<NodeId> all;
    for (const Node& n : g.nodes()) all.push_back(n.id);
    const RegionSpec ops = RegionSpec::exploded_ops(g, all);
    std::vector<c10::IValue> ops_inputs;
    for (ValueId v : ops.inputs) ops_inputs.push_back(reference.rounded[static_cast<size_t>(v)]);
    if (auto local = compile_and_run(*backend, ops, ops_inputs, "exploded", r)) {
      // The eager local results of the same ops on the same inputs: the rule's "eager" per op.
      const std::vector<c10::IValue> eager_local = interpreter.run_region(ops, ops_inputs);
      std::unordered_map<std::string, std::pair<const c10::IValue*, const c10::IValue*>> by_name;
      for (size_t i = 0; i < ops.outputs.size(); ++i) by_name[g.value(ops.outputs[i]).name] = {&(*local)[i], &eager_local[i]};
      for (size_t k = 0; k < r.nodes.size(); ++k) {  // r.nodes[k] is g.nodes()[k]
        NodeError& ne = r.nodes[k];
        const auto ulp_dtype = working_dtype(g, g.nodes()[k]);
        for (ValueError& ve : ne.values) {
          if (!ve.compared) continue;
          auto it = by_name.find(ve.name);
          const c10::IValue& ref = reference.fp64[static_cast<size_t>(g.find(ve.name))];
          if (it == by_name.end() || !it->second.first->isTensor() || !it->second.second->isTensor() || !ref.isTensor()) continue;
          const at::Tensor& compiled_local = it->second.first->toTensor();
          ve.compiled_local = measure(compiled_local, ref.toTensor(), ulp_dtype);
          ve.has_compiled_local = true;
          if (options.keep_values) ve.compiled_local_value = compiled_local;
          if (!judge(compiled_local, it->second.second->toTensor(), ref.toTensor(), options.rule).pass) ne.compiled_local_fails = true;
          ne.compiled_local_ulp = std::max(ne.compiled_local_ulp, ve.compiled_local.exact_kind ? 0.0 : ve.compiled_local.max_ulp);
        }
      }
    }
  }

  // Localization: only when an output diverged and the graph compiled (a verdict to explain).
  const bool graph_ok = !r.compiles.empty() && r.compiles.front().ok;
  if (r.diverged && graph_ok && bisect && backend->compiles_regions()) {
    std::vector<ValueId> failing;
    std::vector<std::string> failing_names;
    for (const OutputVerdict& o : r.outputs)
      if (!o.verdict.pass) {
        failing.push_back(g.find(o.name));
        failing_names.push_back(o.name);
      }
    std::vector<NodeId> cone = failing_cone(g, failing);
    std::vector<size_t> suspects;
    for (size_t i = 0; i < cone.size(); ++i)
      if (r.nodes[static_cast<size_t>(cone[i])].compiled_local_fails) suspects.push_back(i);
    std::set<ValueId> uncomparable;
    for (const std::string& name : uncomparable_values) uncomparable.insert(g.find(name));
    auto oracle = make_compiled_oracle(program, *backend, interpreter, reference, cone, uncomparable, options.rule);
    Localization loc = localize(*oracle, options.localize, suspects, [&](const std::string& s) { *step = s; });
    step->clear();
    loc.failing_outputs = failing_names;
    for (size_t i : suspects) loc.exploded_suspects.push_back(g.node(cone[i]).name);
    // A random op where divergence first shows: compiled and eager draw different streams, so no
    // window can be judged; say that rather than blame accumulated error, and try the levers on it.
    const bool random_first = loc.culprit.kind == Culprit::Kind::Inconclusive && !loc.culprit.nodes.empty() &&
                              std::find(r.random_nodes.begin(), r.random_nodes.end(), loc.culprit.nodes.front()) != r.random_nodes.end();
    if (random_first) {
      loc.culprit.summary = fmt::format(
          "divergence first shows at {}, which draws random numbers: the compiled code draws a different random stream "
          "than eager, so its values cannot be compared op by op (see the compiler_lever hint)",
          loc.culprit.nodes.front());
      loc.culprit.nodes.resize(1);
    }
    const bool named = loc.culprit.kind == Culprit::Kind::SingleOp || loc.culprit.kind == Culprit::Kind::Window;
    if (named && !options.repro_dir.empty()) loc.repro = write_repro(program, loc.culprit, reference, options);
    if (named || random_first)
      loc.hints = explain_culprit(program, interpreter, *backend, loc.culprit, reference, r.random_nodes, options);
    r.localization = std::move(loc);
  }

  // The ranking: where error is introduced. The compiled local error when there is one (what the
  // compiler adds), else the eager local error.
  auto score = [](const NodeError& n) { return n.compiled_local_ulp >= 0 ? std::max(n.compiled_local_ulp, n.local_ulp) : n.local_ulp; };
  std::vector<size_t> order(r.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(r.nodes[a]) > score(r.nodes[b]); });
  for (size_t i : order)
    if (r.ranking.size() < options.top && score(r.nodes[i]) > 0) r.ranking.push_back(i);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

}  // namespace pt2diff
