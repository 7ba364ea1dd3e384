// engine/diff.cpp — implements diff.h: load → IR → runs → comparison → report.
#include "pt2diff/diff.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <set>

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

}  // namespace

DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options) {
  if (options.compiled != "eager")
    throw Error(Error::Kind::Usage, fmt::format("unknown backend '{}' for --compiled (available: eager)", options.compiled));
  const auto start = std::chrono::steady_clock::now();
  const Graph& g = program.ir.graph;
  DiffResult r;
  r.graph = program.path;
  r.inputs = inputs.origin;
  r.compiled = options.compiled;
  r.rule = options.rule;

  Interpreter interpreter(program);
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
    }
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

  // The compiled side is the eager run itself until a compiler backend is chosen.
  const std::vector<c10::IValue>& compiled = runs.native.outputs;
  for (size_t i = 0; i < program.ir.output_specs.size(); ++i) {
    const OutputSpec& spec = program.ir.output_specs[i];
    OutputVerdict ov;
    auto values = spec.arg.values();
    ov.name = values.empty() ? fmt::format("output #{}", i) : g.value(values.front()).name;
    ov.role = std::string(output_kind_name(spec.kind)) + (spec.target.empty() ? "" : " of " + spec.target);
    const c10::IValue& eager = runs.native.outputs[i];
    const c10::IValue& fp64 = runs.fp64.outputs[i];
    if (!eager.isTensor()) continue;
    const bool fp64_ok = fp64.isTensor() && !uncomparable_values.count(ov.name);
    ov.verdict = judge(compiled[i].toTensor(), eager.toTensor(), fp64_ok ? fp64.toTensor() : at::Tensor(), options.rule);
    if (fp64_ok) {
      // ULPs in the producing node's working precision, like the per-node table.
      NodeId producer = values.empty() ? kGraphInput : g.value(values.front()).producer;
      auto ulp_dtype = producer == kGraphInput ? std::nullopt : working_dtype(g, g.node(producer));
      ov.compiled_to_fp64 = measure(compiled[i].toTensor(), fp64.toTensor(), ulp_dtype);
      ov.eager_to_fp64 = measure(eager.toTensor(), fp64.toTensor(), ulp_dtype);
    }
    r.diverged = r.diverged || !ov.verdict.pass;
    r.outputs.push_back(std::move(ov));
  }

  std::vector<size_t> order(r.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.nodes[a].local_ulp > r.nodes[b].local_ulp; });
  for (size_t i : order)
    if (r.ranking.size() < options.top && r.nodes[i].local_ulp > 0) r.ranking.push_back(i);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace pt2diff
