// engine/diff/run_references.cpp — stage run_references: the eager (native dtypes), fp64 and local runs
// in lockstep, the error of every value a node defines, and (when later stages feed regions) every
// eager and fp64 value kept.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/compare/metrics_batch.h"
#include "engine/diff/stages.h"
#include "graphs/graph_text.h"

namespace pt2diff {

std::string shape_of(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

namespace {

/// One defined value's row; tensors only (sym scalars are exact by construction). Its metrics come later
/// (measure_node).
ValueError value_error(const Graph& g, ValueId v, const c10::IValue& native, const c10::IValue& fp64, const c10::IValue& local) {
  ValueError e;
  e.name = g.value(v).name;
  if (!native.isTensor() || !fp64.isTensor() || !local.isTensor()) {
    e.compared = false;
    return e;
  }
  const at::Tensor& n = native.toTensor();
  e.dtype = std::string(dtype_name(static_cast<DType>(n.scalar_type())));
  e.shape = shape_of(n);
  return e;
}

/// The errors of the step's compared values, propagated and local, into r.nodes[row] (its row, already there):
/// at once on the CPU, when `batch` is flushed on a GPU (r.nodes grows meanwhile: found by index then).
void measure_node(const Graph& g, const NodeStep& step, size_t row, MetricsBatch& batch, DiffResult& r) {
  const auto ulp_dtype = working_dtype(g, step.node);
  for (size_t i = 0; i < r.nodes[row].values.size(); ++i) {
    if (!r.nodes[row].values[i].compared) continue;
    const at::Tensor& fp64 = step.fp64[i].toTensor();
    batch.add(step.native[i].toTensor(), fp64, ulp_dtype, [&r, row, i](const Metrics& m) { r.nodes[row].values[i].propagated = m; });
    batch.add(step.local[i].toTensor(), fp64, ulp_dtype, [&r, row, i](const Metrics& m) { r.nodes[row].values[i].local = m; });
  }
}

/// A dropped fp64 value is made again by at most this many cheap ops: its node's, and those of the dropped
/// values it reads, recursively (a chain of pointwise ops between kept values).
constexpr int kMaxRerunOps = 4;

/// The graph inputs of the reference runs (an upcast input rounds back to itself); fp64 values dropped
/// where they can be made again exactly, by the run's interpreter (never with `copy`: ops write in place).
ReferenceRuns start_reference(const Program& program, const BoundInputs& inputs, const Interpreter& interpreter, bool copy) {
  ReferenceRuns reference;
  reference.eager = graph_input_values(program, inputs);
  reference.fp64.resize(program.ir.graph.values().size());
  reference.separate = copy;
  reference.dropped.assign(program.ir.graph.values().size(), 0);
  reference.graph = &program.ir.graph;
  reference.rerun = [&interpreter](NodeId id, const std::function<c10::IValue(ValueId)>& fp64_of) {
    return interpreter.rerun_fp64(id, fp64_of);
  };
  return reference;
}

/// Whether a step's fp64 outputs can be dropped, and `ops`, the cheap ops that make them again: a node the
/// interpreter reruns exactly, all of whose outputs are tensors no later stage reads from the runs' outputs,
/// that costs at most kMaxRerunOps with the dropped values it reads, and that frees memory (its outputs do
/// not share storage with a kept input: a view of a kept value costs nothing). Never when ops write in place.
bool droppable(const Graph& g, const NodeStep& step, const ReferenceRuns& reference, const Interpreter& interpreter,
               const std::vector<int>& rerun_ops, bool copy, int& ops) {
  if (copy || !interpreter.reruns_exactly(step.node.id)) return false;
  const auto outs = step.node.output_values();
  for (size_t i = 0; i < outs.size(); ++i)
    if (g.value(outs[i]).is_graph_output || !step.fp64[i].isTensor() || !step.fp64[i].toTensor().defined() ||
        !step.fp64[i].toTensor().has_storage())
      return false;
  ops = 1;
  for (ValueId in : step.node.input_values()) {
    const auto i = static_cast<size_t>(in);
    ops += rerun_ops[i];
    if (reference.dropped[i] || !reference.fp64[i].isTensor()) continue;
    const at::Tensor& kept = reference.fp64[i].toTensor();
    if (!kept.defined() || !kept.has_storage()) continue;
    for (const c10::IValue& out : step.fp64)
      if (out.toTensor().storage().is_alias_of(kept.storage())) return false;
  }
  return ops <= kMaxRerunOps;
}

/// Keeps a lockstep step's values: eager and fp64 (or marks its fp64 values dropped). `copy` when a later op
/// may mutate them in place.
void keep_reference(const Graph& g, const NodeStep& step, ReferenceRuns& reference, const Interpreter& interpreter,
                    std::vector<int>& rerun_ops, bool copy) {
  auto kept = [copy](const c10::IValue& v) { return copy && v.isTensor() ? c10::IValue(v.toTensor().clone()) : v; };
  int ops = 0;
  const bool drop = droppable(g, step, reference, interpreter, rerun_ops, copy, ops);
  const auto outs = step.node.output_values();
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t v = static_cast<size_t>(outs[i]);
    reference.eager[v] = kept(step.native[i]);
    if (drop) {
      reference.dropped[v] = 1;
      rerun_ops[v] = ops;
    } else {
      reference.fp64[v] = kept(step.fp64[i]);
    }
  }
}

/// The node's errors; with `keep_values`, its values go to `values` too (copies with `copy`: a later
/// op may write into them in place).
NodeError node_error(const Graph& g, const NodeStep& step, bool keep_values, bool copy, DiffValues& values) {
  NodeError ne;
  ne.name = step.node.name;
  ne.target = short_target(step.node.target);
  ne.source = step.node.source.origin();
  ne.module_path = step.node.source.module_path();
  ne.backward_of = step.node.source.backward_of;
  auto outs = step.node.output_values();
  for (size_t i = 0; i < outs.size(); ++i) {
    ne.values.push_back(value_error(g, outs[i], step.native[i], step.fp64[i], step.local[i]));
    if (keep_values && ne.values.back().compared) {
      NodeValues& kept = values.by_value[ne.values.back().name];
      auto keep = [copy](const c10::IValue& v) { return copy ? v.toTensor().clone() : v.toTensor(); };
      kept.eager = keep(step.native[i]);
      kept.fp64 = keep(step.fp64[i]);
      kept.local = keep(step.local[i]);
    }
  }
  return ne;
}

/// The whole storage of `t` as a flat tensor of its dtype, copied: a version of a written storage.
at::Tensor storage_copy(const at::Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
  return t.new_empty({0}).set_(t.storage(), 0, {n}, {1}).clone();
}

ReferenceRuns::Geometry geometry(const at::Tensor& t) {
  return {t.sizes().vec(), t.strides().vec(), t.storage_offset()};
}

/// Where the graph writes in place: where each value of a written storage lies in it (first seen), and each
/// storage a step writes, copied after the write in both runs (every version when `keep_all`, else the latest
/// of a graph input's storage: its value after the graph).
void keep_versions(const Graph& g, const StorageModel& m, const NodeStep& step, ReferenceRuns& reference, bool keep_all) {
  auto note = [&](ValueId v, const c10::IValue& native, const c10::IValue& fp64) {
    const auto i = static_cast<size_t>(v);
    if (!m.is_written(v) || reference.eager_geometry[i] || !native.isTensor() || !fp64.isTensor()) return;
    if (!native.toTensor().defined() || !fp64.toTensor().defined() || !native.toTensor().has_storage()) return;
    reference.eager_geometry[i] = geometry(native.toTensor());
    reference.fp64_geometry[i] = geometry(fp64.toTensor());
  };
  const std::vector<ValueId> ins = step.node.input_values(), outs = step.node.output_values();
  for (size_t i = 0; i < ins.size(); ++i) note(ins[i], step.native_inputs[i], step.fp64_inputs[i]);
  for (size_t i = 0; i < outs.size(); ++i) note(outs[i], step.native[i], step.fp64[i]);
  for (ValueId r : m.writes[static_cast<size_t>(step.node.id)]) {
    const bool input = g.value(r).producer == kGraphInput;
    if (!keep_all && !input) continue;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (m.root[static_cast<size_t>(ins[i])] != r || !step.native_inputs[i].isTensor() || !step.fp64_inputs[i].isTensor()) continue;
      if (!keep_all)  // the latest only
        std::erase_if(reference.versions, [r](const auto& kv) { return kv.first.second == r; });
      reference.versions[{step.node.id, r}] = {storage_copy(step.native_inputs[i].toTensor()), storage_copy(step.fp64_inputs[i].toTensor())};
      break;
    }
  }
}

}  // namespace

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

void run_references(RunState& s) {
  const Graph& g = s.program.ir.graph;
  DiffResult& r = s.result;
  std::vector<int> rerun_ops;  // by ValueId: the cheap ops that make a dropped fp64 value again
  if (s.keep) {
    s.reference = start_reference(s.program, s.inputs, s.interpreter, s.mutating);
    rerun_ops.assign(g.values().size(), 0);
  }
  const bool writes = s.storage.any();
  if (writes) {
    s.reference.storage = &s.storage;
    s.reference.graph = &g;
    s.reference.eager_geometry.assign(g.values().size(), std::nullopt);
    s.reference.fp64_geometry.assign(g.values().size(), std::nullopt);
  }
  MetricsBatch batch;  // on a GPU: one wait for the device per kBatch values, not two per value
  constexpr size_t kBatch = 512;
  s.runs = s.interpreter.run_lockstep(s.inputs, [&](const NodeStep& step) {
    r.nodes.push_back(node_error(g, step, s.options.keep_values, s.mutating, *r.values));
    measure_node(g, step, r.nodes.size() - 1, batch, r);
    if (s.keep) keep_reference(g, step, s.reference, s.interpreter, rerun_ops, s.mutating);
    if (writes) keep_versions(g, s.storage, step, s.reference, s.keep);
    if (batch.pending() >= kBatch) batch.flush();
  });
  batch.flush();
  // Each graph input the graph writes, after the graph (s.outputs past the program's own).
  for (ValueId v : s.storage.mutated_inputs) {
    const NodeId last = s.storage.writers[static_cast<size_t>(v)].back();
    s.runs.native.outputs.push_back(s.reference.eager_after(v, last).toTensor().clone());
    s.runs.fp64.outputs.push_back(s.reference.fp64_after(v, last).toTensor().clone());
  }
  r.fixups = s.runs.fp64.fixups;
  r.autocast = autocast_regions(g);
  r.not_comparable = s.runs.fp64.not_comparable;
  r.random_nodes = s.runs.native.random_nodes;
  // Bitcasts and float8 have no fp64 meaning: their values are shown, never scored.
  for (NodeError& ne : r.nodes) {
    const bool skip = std::find(r.not_comparable.begin(), r.not_comparable.end(), ne.name) != r.not_comparable.end();
    for (ValueError& ve : ne.values) {
      if (skip) {
        ve.compared = false;
        s.uncomparable_values.insert(ve.name);
      }
      if (ve.compared && !ve.local.exact_kind) {
        ne.local_ulp = std::max(ne.local_ulp, ve.local.max_ulp);
        ne.local_relative = std::max(ne.local_relative, relative_rmse(ve.local));
      }
    }
  }
}

}  // namespace pt2diff
