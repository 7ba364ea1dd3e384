// engine/diff/trace_nonfinite.cpp — stage trace_nonfinite: where the compiled code's first NaN/Inf comes
// from. The kernel table's first kernel writing NaN/Inf where eager is finite is traced to a graph input,
// to the model (eager makes them too), to its op alone (the exploded compile) or to the kernel's fusion.
#include <ATen/ops/isfinite.h>

#include "engine/diff/stages.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

namespace {

int64_t nonfinite_count(const c10::IValue& v) {
  if (!v.isTensor() || !v.toTensor().defined() || !v.toTensor().is_floating_point()) return 0;
  const at::Tensor& t = v.toTensor();
  return t.numel() - at::isfinite(t).sum().item<int64_t>();
}

}  // namespace

void trace_nonfinite(RunState& s) {
  KernelTable& t = s.result.kernels;
  if (t.first_nonfinite < 0) return;
  const Graph& g = s.program.ir.graph;
  const KernelCall& k = t.kernels[static_cast<size_t>(t.first_nonfinite)];
  NonfiniteOrigin o;
  o.kernel = k.name;
  for (const ValueId v : s.whole.inputs)  // propagated: a graph input (weights included) holds it already
    if (int64_t n = nonfinite_count(s.reference.eager[static_cast<size_t>(v)])) {
      o.kind = "input";
      o.node = g.value(v).name;
      o.detail = wording::nonfinite_in_input(o.node, n, k.name);
      t.nonfinite_origin = o;
      return;
    }
  const KernelBuffer* first = nullptr;
  for (const KernelBuffer& b : k.buffers)
    if (b.nonfinite > 0) {
      first = &b;
      break;
    }
  o.node = first ? (first->node.empty() ? first->part_of : first->node) : "";
  const NodeError* ne = nullptr;
  for (const NodeError& n : s.result.nodes)
    if (n.name == o.node) ne = &n;
  if (!ne) {
    o.kind = "compiled_code";
    o.detail = wording::nonfinite_in_buffer(k.name, first ? first->buffer : "");
    t.nonfinite_origin = o;
    return;
  }
  int64_t eager = 0, compiled_local = 0;
  bool has_compiled_local = false;
  for (const ValueError& ve : ne->values) {
    eager += ve.propagated.nan + ve.propagated.inf;
    if (ve.has_compiled_local) {
      has_compiled_local = true;
      compiled_local += ve.compiled_local.nan + ve.compiled_local.inf;
    }
  }
  if (eager > 0) {
    o.kind = "model";
    o.detail = wording::nonfinite_from_model(o.node, eager);
  } else if (compiled_local > 0) {
    o.kind = "compiler";
    o.detail = wording::nonfinite_from_compiler(o.node, compiled_local);
  } else {
    o.kind = "compiled_code";
    o.detail = wording::nonfinite_in_kernel(k.name, o.node, first->nonfinite, has_compiled_local, k.nodes);
  }
  t.nonfinite_origin = o;
}

}  // namespace pt2diff
