// pt2diff/advanced/interpreter.h — runs a loaded program node by node through ATen.
//
//   pt2diff::Program program = pt2diff::load_program("graph.pt2");
//   pt2diff::Interpreter interpreter(program);       // plans every node; unknown ops fail here, by name
//   pt2diff::BoundInputs in = pt2diff::bind_inputs(program, pt2diff::load_inputs("inputs.pt"));
//   pt2diff::RunResult native = interpreter.run(in);                                   // graph's own dtypes
//   pt2diff::RunResult fp64 = interpreter.run(in, {.precision = pt2diff::Precision::Fp64});
//
// Native mode calls the same ATen kernels Python eager calls, with the same arguments, so its
// outputs are bit for bit those of `ep.module()(*inputs)` on the same machine. Fp64 mode upcasts
// every floating tensor to float64 and rewrites what would cast back down (see docs/method.md).
#pragma once

#include <ATen/core/ivalue.h>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "pt2diff/region.h"
#include "pt2diff/graph.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"
#include "pt2diff/storage_model.h"

namespace pt2diff {

enum class Precision {
  Native,  ///< the graph's own dtypes: what eager PyTorch computes
  Fp64,    ///< every floating value in float64: the reference
  /// fp16/bf16 values computed and kept in float32, fp32 and wider unchanged: what a fused kernel that
  /// keeps fp32 intermediates computes (a counterfactual for the dtype-promotion hint; run_region only).
  Widened,
};
const char* precision_name(Precision precision);

/// One node's call, handed to RunOptions::after_node: its inputs and outputs (Node::input_values() and
/// Node::output_values() order) and a way to call its kernel again on other inputs.
struct NodeCall {
  const std::vector<c10::IValue>& inputs;
  std::vector<c10::IValue>& outputs;  ///< may be replaced
  std::function<std::vector<c10::IValue>(const std::vector<c10::IValue>& inputs)> rerun;
};

struct RunOptions {
  Precision precision = Precision::Native;
  /// Free each value after its last use (the default). Off keeps every value until the run ends.
  bool free_at_last_use = true;
  /// Called after every top-level node with the values it defined, in Node::output_values() order.
  /// Values are freed after the callback returns, so it sees each value exactly once. run_region() of an
  /// exploded region calls it too, and then keeps none of the nodes' outputs: what it returns for them is None
  /// (a caller that judges op by op holds one op's results at a time, not every op's).
  std::function<void(const Node& node, const std::vector<c10::IValue>& outputs)> on_node;
  /// run_region() only: called after every node, before anything reads its outputs (fault backend).
  std::function<void(const Node& node, NodeCall& call)> after_node;
  /// run() only: the result of a functional collective (`_c10d_functional.all_reduce`, `all_gather_into_tensor`,
  /// `reduce_scatter_tensor`, `all_to_all_single`, `broadcast`) that `node` issues with this rank's `input`, in the
  /// run's precision. `wait_tensor` passes its tensor on without it. Empty: a collective fails, naming `pt2diff dist`,
  /// which runs every rank's graph in lockstep and computes each collective from all of them (docs/distributed.md).
  std::function<at::Tensor(const Node& node, const at::Tensor& input)> collective;
};

struct RunResult {
  /// One value per graph output (ExportedGraph::output_specs order: user outputs and mutations).
  std::vector<c10::IValue> outputs;
  /// Nodes whose fp64 result is not comparable (bitcasts, float8, RNG); empty in native mode.
  std::vector<std::string> not_comparable;
  /// Nodes that draw random numbers. In run_lockstep() their native, fp64 and local runs start from
  /// the same generator state, so they draw the same stream (seed with at::manual_seed to reproduce
  /// Python's numbers).
  std::vector<std::string> random_nodes;
  /// The fp64 fix-ups this run applied, one per op and kind ("aten.to.dtype: dtype bfloat16 -> float64");
  /// empty in native mode.
  std::vector<std::string> fixups;
};

/// One node of a lockstep run: its outputs in the three runs that per-node errors need, each in
/// Node::output_values() order.
struct NodeStep {
  const Node& node;
  const std::vector<c10::IValue>& native;  ///< propagated: the native run from the graph inputs
  const std::vector<c10::IValue>& fp64;    ///< the fp64 reference run
  const std::vector<c10::IValue>& local;   ///< the node alone, in native dtypes, fed the fp64 values of its
                                           ///< inputs rounded to their native dtypes
  /// Its inputs (Node::input_values() order) as the native and fp64 runs hold them after it ran: an op writing in
  /// place has changed them, and they share storage with every view of what it wrote.
  const std::vector<c10::IValue>& native_inputs;
  const std::vector<c10::IValue>& fp64_inputs;
};

struct LockstepResult {
  RunResult native;
  RunResult fp64;
};

/// The graph inputs' values for `inputs`, indexed by ValueId (weights from the program, user inputs
/// from the binding; other entries None): what a region starting at the graph inputs is fed.
std::vector<c10::IValue> graph_input_values(const Program& program, const BoundInputs& inputs);

/// Loads a shared library that registers custom ops with TORCH_LIBRARY (the C++ twin of Python's
/// torch.ops.load_library), so graphs that call them, directly or through auto_functionalized, can
/// run. Load before load_program(). Throws pt2diff::Error(Usage) naming the file and the loader's reason.
void load_op_library(const std::string& path);

/// One node of a graph exported on a GPU that runs differently on the CPU.
struct DeviceRewrite {
  std::string node;    ///< "arange"
  std::string op;      ///< "aten.arange.start_step"
  std::string source;  ///< the user's frame, "model.py:37 in forward: ..."; empty when the archive has none
  std::string what;    ///< "device cuda:0 -> cpu", "a CUDA-only fused attention kernel, run as aten._scaled_dot_product_attention_math"
};

class Interpreter {
 public:
  /// Plans every node (subgraphs included). Throws pt2diff::Error(Unsupported) listing every op the
  /// engine cannot run, with node names and source lines, before anything runs.
  explicit Interpreter(const Program& program);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Runs the whole graph. Throws pt2diff::Error naming the node (op, source line) if an op fails.
  RunResult run(const BoundInputs& inputs, const RunOptions& options = {}) const;

  /// Runs a region alone in native dtypes: `inputs` holds one value per RegionSpec::inputs entry;
  /// returns one value per RegionSpec::outputs entry. Exploded regions run each node on the given
  /// values of its inputs. Honors RunOptions::after_node. Precision Native or Widened (inputs in
  /// fp16/bf16 are computed in float32; outputs stay in float32).
  std::vector<c10::IValue> run_region(const RegionSpec& region, const std::vector<c10::IValue>& inputs,
                                      const RunOptions& options = {}) const;

  /// Runs native and fp64 side by side, node by node, plus every node's local run, calling
  /// `on_node` after each top-level node. Values are freed after their last use in both runs, so
  /// memory stays that of two runs, however long the graph.
  LockstepResult run_lockstep(const BoundInputs& inputs, const std::function<void(const NodeStep&)>& on_node) const;

  /// Whether rerun_fp64() of top-level node `id` is cheap and gives back the bits the fp64 run made: a
  /// pointwise op or a view, neither random nor writing in place (a matmul, a reduction or attention is
  /// not: their kernels are costly, and may sum in another order on another call).
  bool reruns_exactly(NodeId id) const;
  /// Runs top-level node `id` of the fp64 run again, alone, and returns its outputs. `fp64_of` gives each
  /// of its input values as the fp64 run had it; a graph input is given as bound (its native value), and
  /// cast here as the fp64 run casts it. What lets a keeper of fp64 values drop the cheap ones.
  std::vector<c10::IValue> rerun_fp64(NodeId id, const std::function<c10::IValue(ValueId)>& fp64_of) const;

  /// Seeds the global CPU generator with `seed` at the start of every run, run_region and
  /// run_lockstep, so random ops draw the stream of Python after torch.manual_seed(seed); a compiled
  /// side seeded alike (BackendOptions::seed) can then draw the same one. nullopt: the generator
  /// continues from wherever it is.
  void set_seed(std::optional<uint64_t> seed);

  /// Where the runs execute (default: both on the CPU): `native` for the native, local and region runs,
  /// `reference` for the fp64 run. Inputs and weights are copied there (weights once per device); a
  /// device baked into the graph follows the run (on a GPU, the export's device is the run's GPU). With
  /// the fp64 run on another device, random nodes draw other streams and are reported not comparable.
  void set_devices(const Device& native, const Device& reference);

  /// Some op writes into its inputs in place (a custom op in a training-IR graph): values kept from a
  /// run may change later in that run, so keepers copy them.
  bool mutates_inputs() const;

  /// The nodes whose in-place writes another reader could see, by name (top-level graph order, then
  /// nodes of bodies): a write into a graph input or output, into a value something else reads, into a
  /// view, or inside a higher-order op's body. Per-op inputs (exploded compiles, localization windows)
  /// cannot stand for those. Every other write is confined: the op writes a fresh intermediate that
  /// only it reads (training IR's `relu_`, `hardswish_`, `dropout_` after a conv or a linear, and chains
  /// of them), so it computes what its functional form would. Empty when nothing writes, or every
  /// write is confined.
  std::vector<std::string> unconfined_mutations() const;

  /// Which values of the top-level graph share a storage and which nodes write it, from each op's schema
  /// (pt2diff/storage_model.h): what keeps the program's order where a graph writes in place. A body's writes
  /// (inside a higher-order op) are not followed.
  StorageModel storage_model() const;

  /// The nodes that run differently from the graph as written because pt2diff runs it on the CPU, in
  /// graph order. Empty for a graph exported on the CPU, and for native runs on a GPU. Known before
  /// anything runs.
  std::vector<DeviceRewrite> device_rewrites() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pt2diff
