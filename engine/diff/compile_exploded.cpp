// engine/diff/compile_exploded.cpp — stage compile_exploded: every op on its own through the compiler,
// fed the fp64 values of its inputs rounded to their dtypes (the eager local run's inputs): the
// compiled local error of every node, in one compile, and which nodes fail the rule alone (suspects).
#include <algorithm>
#include <unordered_map>

#include "engine/compare/judge_measured.h"
#include "engine/diff/node_ratio.h"
#include "engine/diff/stages.h"

namespace pt2diff {

std::vector<NodeId> left_out_of_exploded(const Graph& g, const StorageModel& m) {
  std::vector<NodeId> out;
  if (!m.any()) return out;
  for (const Node& n : g.nodes()) {
    bool leave = !m.writes[static_cast<size_t>(n.id)].empty();
    for (ValueId v : n.input_values()) leave = leave || m.write_seen(g, v, n.id).has_value();
    if (leave) out.push_back(n.id);
  }
  return out;
}

ExplodedCompile exploded_request(const RunState& s) {
  const Graph& g = s.program.ir.graph;
  std::vector<NodeId> all;
  const std::vector<NodeId> left_out = left_out_of_exploded(g, s.storage);
  for (const Node& n : g.nodes())
    if (!std::binary_search(left_out.begin(), left_out.end(), n.id)) all.push_back(n.id);
  RegionSpec ops = RegionSpec::exploded_ops(g, all);
  // Asked of the compiler: the values the graph reads or returns, and that eager computed. The parts of a
  // multi-output op nothing reads (layer norm's mean and rstd, attention's logsumexp) cannot change an
  // output, and compilers disagree on them: cuDNN attention's logsumexp without compute_log_sumexp is
  // undefined in eager and a Tensor to its fake kernel (torch.compile stops the whole exploded graph with
  // "expected Tensor()"); a GPU export's layer-norm mean is float32 as recorded, bfloat16 compiled for the CPU.
  std::erase_if(ops.outputs, [&](ValueId v) {
    const c10::IValue& eager = s.reference.eager[static_cast<size_t>(v)];
    const Value& value = g.value(v);
    return (value.users.empty() && !value.is_graph_output) || eager.isNone() ||
           (eager.isTensor() && !eager.toTensor().defined());
  });
  ExplodedCompile x;
  x.inputs = s.reference.rounded(ops.inputs);
  x.ops = std::move(ops);
  return x;
}

std::vector<ExplodedValue> judge_exploded(const RunState& s, const ExplodedCompile& x) {
  const Graph& g = s.program.ir.graph;
  const DiffResult& r = s.result;
  std::vector<ExplodedValue> judged;
  const RegionSpec& ops = x.ops;
  const std::vector<c10::IValue>& local = *x.outputs;
  std::unordered_map<std::string, const c10::IValue*> compiled_by_name;
  for (size_t i = 0; i < ops.outputs.size(); ++i) compiled_by_name[g.value(ops.outputs[i]).name] = &local[i];
  std::unordered_map<NodeId, size_t> row;  // r.nodes[k] is g.nodes()[k]
  for (size_t k = 0; k < g.nodes().size(); ++k) row[g.nodes()[k].id] = k;
  // The eager local results of the same ops on the same inputs (the rule's "eager" per op), judged op by op as the
  // interpreter makes them: one op's results held at a time, not every op's.
  RunOptions judge_each;
  judge_each.on_node = [&](const Node& n, const std::vector<c10::IValue>& eager_outs) {
    const size_t k = row.at(n.id);
    const NodeError& ne = r.nodes[k];
    const auto ulp_dtype = working_dtype(g, n);
    const std::vector<ValueId> outs = n.output_values();
    for (size_t i = 0; i < ne.values.size(); ++i) {
      const ValueError& ve = ne.values[i];
      if (!ve.compared) continue;
      auto it = compiled_by_name.find(ve.name);
      const ValueId id = g.find(ve.name);
      const auto pos = std::find(outs.begin(), outs.end(), id);
      const c10::IValue ref = s.reference.fp64_of(id);
      if (it == compiled_by_name.end() || pos == outs.end() || !it->second->isTensor() || !ref.isTensor()) continue;
      const c10::IValue& eager_local = eager_outs[static_cast<size_t>(pos - outs.begin())];
      if (!eager_local.isTensor()) continue;
      const at::Tensor& compiled_local = it->second->toTensor();
      ExplodedValue e;
      e.row = k;
      e.value = i;
      ValueError measured = ve;
      measured.compiled_local = e.compiled_local = measure(compiled_local, ref.toTensor(), ulp_dtype);
      if (s.options.keep_values) e.kept = compiled_local;
      // The compiled value measured once (above); eager's local value is this run's, measured by the rule.
      const Verdict alone = judge_measured(compiled_local, eager_local.toTensor(), ref.toTensor(), s.options.rule,
                                           known_ulps(e.compiled_local, ulp_dtype, compiled_local.scalar_type()), nullptr);
      e.fails = counts_as_failing(alone, s.options.localize_suspicious);
      if (!e.compiled_local.exact_kind) e.ratio = compiled_local_ratio(s, n, measured);
      judged.push_back(std::move(e));
    }
  };
  s.interpreter.run_region(ops, x.inputs, judge_each);
  return judged;
}

void compile_exploded(RunState& s) {
  const Graph& g = s.program.ir.graph;
  DiffResult& r = s.result;
  // Run ahead on a second worker (compile_ahead.h): taken here, so that its compiles entry comes where it
  // would have without, and the second worker ends.
  std::optional<ExplodedCompile> ahead = std::move(s.ahead.exploded);
  s.ahead.exploded.reset();
  if (s.ahead.exploded_start.valid()) s.ahead.exploded_start.wait();  // its start-up ahead, were it still under way
  // It is not asked again: it ends in a thread (a GPU worker's process and context torn down, then reaped) while
  // the run goes on; the run's state waits for it at its own end.
  if (s.ahead.exploded_backend)
    s.ahead.exploded_retired = std::async(std::launch::async, [b = std::move(s.ahead.exploded_backend)]() mutable { b.reset(); });
  // A worker that hung, died twice or cannot run here at all is not asked again.
  const bool worker_lost = !r.compiles.empty() && r.compiles.back().failure && loses_compiler(*r.compiles.back().failure);
  if (!s.exploded || worker_lost || g.nodes().empty()) return;
  ExplodedCompile x;
  if (ahead) {
    x = std::move(*ahead);
    for (CompileRecord& rec : x.record.compiles) r.compiles.push_back(std::move(rec));
    r.compiled_failed = r.compiled_failed || x.record.compiled_failed;
  } else {
    x = exploded_request(s);
    x.outputs = compile_and_run(s.backend, x.ops, x.inputs, "exploded", r);
  }
  if (!x.outputs) return;
  if (x.judge_error) std::rethrow_exception(x.judge_error);
  if (!x.judged) x.judged = judge_exploded(s, x);
  for (ExplodedValue& e : *x.judged) {
    NodeError& ne = r.nodes[e.row];
    ValueError& ve = ne.values[e.value];
    ve.compiled_local = e.compiled_local;
    ve.has_compiled_local = true;
    if (s.options.keep_values) r.values->by_value[ve.name].compiled_local = std::move(e.kept);
    if (e.fails) ne.compiled_local_fails = true;
    ne.compiled_local_ulp = std::max(ne.compiled_local_ulp, ve.compiled_local.exact_kind ? 0.0 : ve.compiled_local.max_ulp);
    if (!ve.compiled_local.exact_kind) {
      ne.compiled_local_relative = std::max(ne.compiled_local_relative, relative_rmse(ve.compiled_local));
      ne.compiled_vs_eager = std::max(ne.compiled_vs_eager, e.ratio);
    }
  }
}

}  // namespace pt2diff
