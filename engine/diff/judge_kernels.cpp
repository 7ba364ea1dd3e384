// engine/diff/judge_kernels.cpp — stage judge_kernels: the kernel table. Every buffer the whole graph's
// compiled code wrote (observed in the compile and run that gave the verdict: compile_graph asked for it)
// is judged with the rule against the eager and fp64 values of the exported node it computes. The kernel
// of the failing buffer earliest in graph order is the first suspect, found with no compile of its own.
#include <ATen/ops/isfinite.h>
#include <algorithm>
#include <map>

#include "engine/compare/judge_measured.h"
#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"
#include "pt2diff/compare.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {


/// The value of `node` that `buffer` holds: the output `index` when the compiler says, else the one
/// output with the buffer's dtype and (static) element count. kNoValue (with why) when there is none or several.
ValueId value_for(const Graph& g, const Node& node, const ObservedBuffer& b, std::string& why) {
  const std::vector<ValueId> outs = node.output_values();
  std::vector<ValueId> candidates;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (b.index >= 0 && static_cast<size_t>(b.index) != i) continue;
    const Value& v = g.value(outs[i]);
    if (v.kind != ValueKind::Tensor || !v.meta) continue;
    if (v.meta->dtype != DType::Undefined && static_cast<DType>(b.value.scalar_type()) != v.meta->dtype) continue;
    int64_t numel = 1;  // a static element count that differs rules it out (layer norm's output vs its mean)
    bool known = true;
    for (const SymInt& d : v.meta->sizes) {
      known = known && d.value.has_value();
      if (d.value) numel *= *d.value;
    }
    if (known && numel != b.value.numel()) continue;
    candidates.push_back(outs[i]);
  }
  if (candidates.size() == 1) return candidates[0];
  why = wording::buffer_without_value(node.name, c10::toString(b.value.scalar_type()), candidates.size());
  return kNoValue;
}

/// The reference runs' errors of value `v` of the node in row `row` of DiffResult::nodes, when they measured it.
const ValueError* eager_error(const RunState& s, size_t row, ValueId v) {
  const Graph& g = s.program.ir.graph;
  if (row >= s.result.nodes.size()) return nullptr;
  for (const ValueError& ve : s.result.nodes[row].values)
    if (ve.compared && ve.name == g.value(v).name) return &ve;
  return nullptr;
}

/// A kernel call's entry, at its first buffer: its kernel, the nodes it computes (graph order) and its code.
KernelCall kernel_call(const ObservedBuffer& b, const std::map<std::string, NodeId>& node_by_name, const KernelMap& observed) {
  KernelCall k;
  k.name = b.kernel;
  std::vector<std::pair<NodeId, std::string>> ordered;
  for (const std::string& n : b.kernel_nodes)
    if (auto f = node_by_name.find(n); f != node_by_name.end()) ordered.emplace_back(f->second, n);
  std::sort(ordered.begin(), ordered.end());
  for (auto& [id, name] : ordered) k.nodes.push_back(name);
  if (auto code = observed.code.find(b.kernel); code != observed.code.end()) k.code = code->second;
  return k;
}

/// Buffer `b` judged as value `v` of `node` (row `row` of the node table): against eager's kept value with fp64 as
/// referee, or why not (kb.why_not).
void judge_buffer(const RunState& s, const ObservedBuffer& b, NodeId node, ValueId v, size_t row, KernelBuffer& kb) {
  const Graph& g = s.program.ir.graph;
  const c10::IValue& eager = s.reference.eager[static_cast<size_t>(v)];
  const c10::IValue fp64 = s.reference.fp64_of(v);
  if (!eager.isTensor() || !fp64.isTensor() || !eager.toTensor().defined() || !fp64.toTensor().defined()) {
    kb.why_not = "no eager or fp64 value kept for " + g.value(v).name;
    return;
  }
  if (s.uncomparable_values.count(g.value(v).name)) {
    kb.why_not = g.value(v).name + " is not comparable (bitcast or float8)";
    return;
  }
  if (eager.toTensor().numel() != b.value.numel()) {
    kb.why_not = wording::buffer_size_differs(g.value(v).name, eager.toTensor().numel(), b.value.numel());
    return;
  }
  const at::Tensor& e = eager.toTensor();
  at::Tensor value = b.value;
  if (value.sizes() != e.sizes()) {
    value = value.reshape(e.sizes());
    kb.reshaped = true;
  }
  kb.value = g.value(v).name;
  kb.judged = true;
  // Each side measured once: the buffer here, eager's value when the reference runs measured it
  // (ValueError::propagated, the same eager and fp64 values) in the ULPs the rule judges in.
  const auto ulp_dtype = working_dtype(g, g.node(node));
  kb.metrics = measure(value, fp64.toTensor(), ulp_dtype);
  const ValueError* known = eager_error(s, row, v);
  kb.verdict = judge_measured(value, e, fp64.toTensor(), s.options.rule, known_ulps(kb.metrics, ulp_dtype, value.scalar_type()),
                              known ? known_ulps(known->propagated, ulp_dtype, e.scalar_type()) : nullptr);
  kb.pass = kb.verdict.pass;
}

}  // namespace

void judge_kernels(RunState& s) {
  KernelTable& t = s.result.kernels;
  if (!s.observed) return;
  t.asked = true;
  if (!s.observed->unavailable.empty()) {
    t.unavailable = s.observed->unavailable;
    return;
  }
  t.available = true;
  const Graph& g = s.program.ir.graph;
  std::map<std::string, NodeId> node_by_name;
  std::map<NodeId, size_t> row;  // r.nodes[k] is g.nodes()[k]
  for (const Node& n : g.nodes()) {
    row.emplace(n.id, row.size());
    node_by_name[n.name] = n.id;
  }
  std::map<std::string, size_t> call_index;  // kernel call → its entry in t.kernels
  NodeId first_failing_node = -1;
  const c10::Device referee = s.result.devices.reference.empty() ? c10::Device(c10::kCPU) : c10::Device(s.result.devices.reference);
  // Each buffer's copy is let go once judged: no later stage reads it (the table keeps its figures).
  for (ObservedBuffer& b : s.observed->buffers) {
    auto [it, fresh] = call_index.emplace(b.call, t.kernels.size());
    if (fresh) t.kernels.push_back(kernel_call(b, node_by_name, *s.observed));
    KernelCall& k = t.kernels[it->second];
    KernelBuffer kb;
    kb.buffer = b.buffer;
    kb.node = b.node;
    kb.part_of = b.part_of;
    kb.dtype = c10::toString(b.value.scalar_type());
    kb.shape = shape_of(b.value);
    ++t.observed;
    t.observed_bytes += static_cast<int64_t>(b.value.numel()) * static_cast<int64_t>(b.value.element_size());
    // On the referee's device once (read back from a worker, the buffer is on the host; the rule and the metrics
    // would each copy it to a GPU reference again), its NaN/Inf counted there.
    if (b.value.device() != referee) b.value = b.value.to(referee);
    auto node = b.node.empty() ? node_by_name.end() : node_by_name.find(b.node);
    ValueId v = kNoValue;
    if (b.node.empty()) {
      kb.why_not = b.part_of.empty() ? "the compiler names no node for it" : "an internal step of " + b.part_of;
    } else if (node == node_by_name.end()) {
      kb.why_not = "no node '" + b.node + "' in the graph";
    } else {
      v = value_for(g, g.node(node->second), b, kb.why_not);
    }
    if (v != kNoValue) {
      judge_buffer(s, b, node->second, v, row.at(node->second), kb);
      if (kb.judged) ++t.judged;
      if (kb.judged && !kb.pass) {
        k.fails = true;
        if (first_failing_node < 0 || node->second < first_failing_node) {
          first_failing_node = node->second;
          t.first_failing = static_cast<int64_t>(it->second);
          t.first_failing_node = b.node;
        }
      }
    }
    // Its NaN/Inf: the metrics counted them where the buffer was judged, else a pass of their own.
    if (b.value.is_floating_point()) {
      kb.nonfinite = kb.judged ? kb.metrics.nan + kb.metrics.inf : b.value.numel() - at::isfinite(b.value).sum().item<int64_t>();
      if (kb.nonfinite > 0 && t.first_nonfinite < 0) t.first_nonfinite = static_cast<int64_t>(it->second);
    }
    k.buffers.push_back(std::move(kb));
    b.value = at::Tensor();
  }
}

}  // namespace pt2diff
