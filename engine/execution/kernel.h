// engine/execution/kernel.h — one kernel per node, chosen once before a run (nativert's OpKernel).
#pragma once

#include <ATen/core/ivalue.h>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pt2diff/graph.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

/// One run's values, indexed by ValueId of the graph being run.
struct Frame {
  std::vector<c10::IValue> values;
  const c10::IValue& at(ValueId v, const Graph& g) const;
};

/// What a kernel may need from the run: the precision, the device and a way to run a subgraph.
struct ExecContext {
  Precision precision = Precision::Native;
  /// Where this run's tensors live. A device baked into the graph (factories, casts, metadata asserts)
  /// follows it: see run_device().
  c10::Device device = c10::Device(c10::kCPU);
  std::string export_device_type = "cpu";  ///< Program::export_device.type: "cuda" for a GPU export
  std::function<std::vector<c10::IValue>(const Graph&, std::vector<c10::IValue>)> run_subgraph;
  std::vector<std::string>* not_comparable = nullptr;
  std::set<std::string>* fixups = nullptr;  ///< fp64 fix-ups applied, as "op: what" (deduplicated)
  /// RunOptions::collective of the run (null: the run has none, and a collective fails naming `pt2diff dist`).
  const std::function<at::Tensor(const Node&, const at::Tensor&)>* collective = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const Node& node, const Graph& graph, Frame& frame, const ExecContext& ctx) const = 0;
  /// Draws from the global random generator (dropout, rand*, bernoulli): runs of such a node must
  /// start from the same generator state to be comparable.
  virtual bool is_random() const { return false; }
  /// Writes into an input in place (a custom op's `Tensor(a!)` argument in a training-IR graph).
  virtual bool mutates_inputs() const { return false; }
  /// The names of the schema arguments this kernel writes in place (empty when it writes none).
  virtual std::vector<std::string> written_arguments() const { return {}; }
  /// Whether an output may share storage with an input (a view, or the return of an in-place op).
  /// True unless the kernel knows its op returns fresh tensors only.
  virtual bool output_may_alias_input() const { return true; }
  /// By output: the name of the schema argument whose storage that output shares (a view's `self`, an in-place
  /// op's written argument), or "" for a fresh tensor. Empty when the kernel cannot tell (no schema).
  virtual std::vector<std::string> output_alias_arguments() const { return {}; }
  /// How this kernel departs from the node as written so that a graph exported on a GPU runs on the
  /// CPU ("device cuda:0 -> cpu", a CUDA-only op run as its reference form); empty when it does not.
  virtual std::string device_rewrite() const { return {}; }
  /// Interpreter::reruns_exactly(): a pointwise op or a view, neither random nor writing in place.
  virtual bool reruns_exactly() const { return false; }
};

/// Chooses the kernel for `node` of `graph`, or returns nullptr and sets `why` when nothing can run it.
std::unique_ptr<Kernel> make_kernel(const Node& node, const Graph& graph, std::string& why);

// The kernel families (one file each).
std::unique_ptr<Kernel> make_dispatcher_kernel(const Node& node, std::string& why);
std::unique_ptr<Kernel> make_scalar_kernel(const Node& node, std::string& why);
std::unique_ptr<Kernel> make_higher_order_kernel(const Node& node, std::string& why);
/// A functional collective (_c10d_functional.*): wait_tensor passes its tensor on; the others ask the run's
/// ExecContext::collective (collective_kernel.cpp).
std::unique_ptr<Kernel> make_collective_kernel(const Node& node, std::string& why);
/// Whether make_scalar_kernel() computes `target` ("_operator.add", "torch.sym_max", "math.ceil"): the
/// op catalog asks this, so the list of scalar ops is the kernels' own.
bool is_scalar_op(const std::string& target);
/// Whether make_higher_order_kernel() has a handler for the higher-order op `name` ("cond", "map_impl").
bool has_higher_order_kernel(const std::string& name);
/// auto_functionalized(_v2): the mutating op called on clones (dispatcher_kernel.cpp).
std::unique_ptr<Kernel> make_auto_functionalized_kernel(const Node& node, std::string& why);
/// A CUDA-only fused attention op run as aten._scaled_dot_product_attention_math (refused when the
/// graph reads its other outputs).
std::unique_ptr<Kernel> make_fused_attention_kernel(const Node& node, const Graph& graph, std::string& why);

/// The device a node's device argument `d` means in a run on `ctx.device`, as torch.export's
/// move_to_device_pass would rewrite it: on the CPU every device but meta is the CPU; on a GPU the
/// export's device (and any CUDA device) is the run's GPU, and other devices stay.
c10::Device run_device(const Device& d, const ExecContext& ctx);

/// Resolves a literal-or-value symbolic argument.
c10::IValue sym_value(const SymArg& s, const Frame& frame, const Graph& graph);
/// The number an Int/Float/Bool/SymInt/SymFloat/SymBool argument carries; None for other kinds.
c10::IValue scalar_value(const Argument& a, const Frame& frame, const Graph& graph);
/// Stores `value` into the frame slots named by an output argument (tensor, list, sym).
void store_output(const Argument& out, c10::IValue value, Frame& frame);

}  // namespace pt2diff
