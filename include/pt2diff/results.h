// pt2diff/results.h — what a diff run found, as plain data (no torch): per-node errors, per-output
// verdicts, the compiles, the localization; and the reports made from it.
//
//   const pt2diff::DiffResult r = pt2diff::diff(program, inputs, {});
//   for (const auto& out : r.outputs) std::cout << out.name << ": " << out.verdict.reason << "\n";
//   std::cout << pt2diff::to_text(r);   // or to_json(r): docs/report.schema.json
//
// The tensors themselves are in DiffResult::values (pt2diff/values.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/failure.h"
#include "pt2diff/graph.h"
#include "pt2diff/kernels.h"
#include "pt2diff/localize.h"
#include "pt2diff/compiler_search.h"
#include "pt2diff/workaround.h"
#include "pt2diff/verdict.h"

namespace pt2diff {

struct DiffValues;  // pt2diff/values.h

/// One value a node defines, against the fp64 reference.
struct ValueError {
  std::string name;
  std::string dtype;       ///< native dtype ("bfloat16")
  std::string shape;       ///< "[8, 64]"
  Metrics propagated;      ///< native run from the graph inputs vs fp64
  Metrics local;           ///< the node alone on fp64 inputs rounded to native dtypes vs fp64
  Metrics compiled_local;  ///< the same inputs through the compiler (exploded compile) vs fp64
  bool compared = true;    ///< false for non-tensor values and values fp64 cannot reproduce
  bool has_compiled_local = false;  ///< false when no exploded compile ran (or it failed)
};

struct NodeError {
  std::string name;
  std::string target;       ///< "aten.mm.default"
  std::string source;       ///< user frame: "model.py:39 in forward: h = self.lin(x)"
  std::string module_path;  ///< "encoder.layers.0.attn"
  /// In a training step's graph, a backward node: the forward node it is the gradient of (docs/training.md).
  std::string backward_of;
  std::vector<ValueError> values;
  /// The node's worst local error in ULPs of its working precision (the coarsest floating dtype
  /// among its inputs and outputs): what the ranking uses.
  double local_ulp = 0;
  /// The same for the compiled local error; negative when there is none.
  double compiled_local_ulp = -1;
  /// The node's worst local error at its values' scale (relative_rmse(): RMSE / RMS(fp64)), eager's and
  /// the compiled local one (negative when there is none).
  double local_relative = 0;
  double compiled_local_relative = -1;
  /// How many times farther from fp64 the compiled local result is than the eager local one: the largest
  /// error_ratio() over its values; 0 without a compiled local error. The ranking sorts by it.
  double compiled_vs_eager = 0;
  /// The exploded compile's result for this node fails the rule against its eager local result
  /// (fp64 as referee): a suspect for localization.
  bool compiled_local_fails = false;
};

/// A node whose compiled code, fed the same fp64-exact inputs as eager (the exploded compile), lands much
/// farther from fp64 than eager does: evidence of a compiler bug whatever the outputs say (docs/verdicts.md,
/// "Node evidence"). Nodes with the same op and input shapes that stand out too (one lowering used in every
/// layer) are one finding, named by the first in graph order.
struct NodeFinding {
  std::string node, op, source, module_path;  ///< the first such node in graph order, as the user knows it
  std::string value, dtype, shape;            ///< its value with the largest ratio
  Metrics eager_local;                        ///< eager's local result against fp64
  Metrics compiled_local;                     ///< the compiled local result against fp64
  /// error_ratio(compiled_local, eager_local): compiled local RMSE / max(eager local RMSE, u x RMS(fp64)).
  double ratio = 0;
  /// Compiled local RMSE in units of the value's own rounding, u x RMS(fp64) (u: its dtype's unit roundoff).
  double roundoffs = 0;
  Level level = Level::Suspicious;  ///< Suspicious (ratio >= node_ratio) or Fail (ratio >= node_fail_ratio)
  /// The other nodes with the same op and input shapes whose ratio also reaches node_ratio, in graph order,
  /// and their ratios.
  std::vector<std::string> also;
  std::vector<double> also_ratios;
  /// The kernel calls of the whole graph's compiled code that compute `node` (DiffResult::kernels), so the
  /// kernel table and the node verdict name the same place; empty without a kernel map.
  std::vector<std::string> kernels;
};

/// One compile of the whole graph with every finding's nodes left eager: does the outputs' error go back
/// to eager's? The cheapest honest check that the nodes cause what the outputs show (NodeVerdict).
struct NodeConfirmation {
  /// "confirmed": with the nodes eager the outputs' worst error ratio (compiled RMSE to fp64 / eager's) is
  /// back within kNodeConfirmBound of eager's, from above it; "invisible_at_outputs": it was already within
  /// it (the outputs absorbed the error entirely: the node evidence stands alone); "not_confirmed": it
  /// stays above it; "unavailable": the backend cannot leave nodes eager or compile regions;
  /// "compiler_failed": that compile failed (`summary` says how).
  std::string conclusion;
  std::vector<std::string> eager;  ///< the nodes left eager (every finding's)
  std::string output;              ///< the output with the worst ratio before
  double before = 0;               ///< the worst output error ratio of the run's own compile
  double after = 0;                ///< the same output's ratio with the nodes eager
  size_t compiles = 0;
  double seconds = 0;
  std::string summary;             ///< one line
};
/// The bound a confirmation brings the outputs back within (compiled RMSE to fp64 / eager's): clean
/// compiles measure 0.6 to 1.3 at the outputs (docs/verdicts.md).
inline constexpr double kNodeConfirmBound = 1.5;

/// The node verdict: the exploded compile's compiled local errors judged node by node against eager's
/// (ToleranceRule::node_ratio, node_fail_ratio). It costs no compile: the exploded compile already ran.
struct NodeVerdict {
  bool available = false;     ///< the exploded compile ran and gave compiled local errors
  std::string unavailable;    ///< why not, when !available ("--no-exploded", "the exploded compile failed", ...)
  size_t judged = 0;          ///< floating values judged
  Level level = Level::Pass;  ///< the worst finding's level; Pass without findings
  double worst_ratio = 0;     ///< the largest ratio over every judged value (the margin of a clean run)
  std::string worst_node;     ///< its node
  std::vector<NodeFinding> findings;  ///< in graph order of their first node
  std::optional<NodeConfirmation> confirmation;  ///< when localization ran on a finding
};

/// A dim the compile saw as a size that varies: a graph input's dim the archive exported dynamic
/// (torch.export.Dim), or a symbol of the compile's own (its ShapeEnv).
struct DynamicDim {
  std::string input;   ///< the graph input ("x"), or the compile's name of the dim ("x.size(0)")
  int64_t dim = -1;    ///< the dim of `input`; -1 for an int input that holds a size, or a compile symbol
  std::string symbol;  ///< the archive's symbol ("s77", "2*s77") or the compile's
  std::optional<int64_t> min, max;  ///< the range (nullopt: unbounded, or a derived dim bounded by its symbols)
};

/// How a compile treated the graph's dynamic dims (docs/dynamic-shapes.md): compiled symbolic ("dynamic", as
/// torch.compile compiles dims marked dynamic), or specialized to the sizes it was given ("static").
struct ShapeCompile {
  std::string mode;                 ///< "dynamic" or "static"
  std::string why_static;           ///< when static: no dynamic dim, --static, or what forced a size
  std::vector<DynamicDim> dims;     ///< the region inputs' dims the archive exported dynamic
  std::vector<DynamicDim> symbols;  ///< the compile's symbols: input = "x.size(0)", the range it assumed
  /// The guards the compile made, in the inputs' terms ("Eq(8*sigmoid.size(0), 4*mul)"): conditions a call at other
  /// sizes must meet to run the same compiled code; the ranges of `symbols` are guards too and not repeated.
  std::vector<std::string> guards;
  /// What a dynamic compile could not keep ("... satisfy the generated guard 2 <= x.size(0) and x.size(0) <= 15":
  /// the program narrows the exported range, and sizes past it recompile); empty otherwise.
  std::string note;
  int64_t recompiles = 0;           ///< compiles past the first its runs caused (a guard failed at their sizes)
};

/// One compile the run asked for, and how it went.
struct CompileRecord {
  std::string what;          ///< "graph" (the whole graph, fused) or "exploded" (every op on its own)
  size_t nodes = 0;
  bool ok = false;
  std::optional<FailureKind> failure;  ///< why it failed, when !ok (failure_kind_name() prints it)
  std::string message;       ///< the compiler's or worker's message, one line
  double compile_seconds = 0;
  double run_seconds = 0;
  /// The start of the compiler's worker this compile waited for (process, Python's imports, the archive loaded on
  /// its device: Backend::startup_seconds()), 0 when it was running already; for a compile run ahead
  /// (DiffOptions::overlap) the start of its own worker, made beside the reference runs.
  double worker_start_seconds = 0;
  /// How the compiler treated the graph's dynamic dims; nullopt for a backend that does not say (eager, fault,
  /// external, an AOTI package given ready-made).
  std::optional<ShapeCompile> shapes;
};

struct OutputVerdict {
  std::string name;  ///< verdict.level: pass, suspicious, fail; verdict.blind_spot: a rule blind to 1% here
  std::string role;      ///< "user_output", "buffer_mutation of running_mean", ...
  /// The graph value judged: `name`, except for a graph input the graph writes in place, named "input 'x' after
  /// the graph" (role user_input_mutation, buffer_mutation or parameter_mutation of it), whose value is "x", and a
  /// training step's loss and gradients, named "loss" and "fc1.weight.grad" (docs/training.md).
  std::string value;
  /// A graph input the graph writes in place, judged after the graph: not one of the program's own outputs.
  bool written_input = false;
  Verdict verdict;       ///< compiled vs eager, fp64 as referee ("no_compiled_value" when the compiler failed)
  Metrics compiled_to_fp64;
  Metrics eager_to_fp64;
};

/// Where the engine's own runs executed, and how the fp64 run's device was chosen.
struct RunDevices {
  std::string native = "cpu";     ///< the eager (native dtypes), local and region runs: "cpu", "cuda:0"
  std::string reference = "cpu";  ///< the fp64 reference run
  /// Why the reference is where it is: "--reference-device cpu", "auto: the fp64 run needs about 3.1 GiB
  /// of the 80 GiB free on cuda:0"; empty for a CPU run.
  std::string why;
  /// The most GPU memory the engine's allocations held at once (torch's caching allocator), in bytes;
  /// -1 for a CPU run or a torch without the counter.
  int64_t peak_gpu_bytes = -1;
  /// The engine process's resident memory when the diff started (the program and inputs loaded), and the most it
  /// has had since the process started (Linux VmRSS and VmHWM), in bytes; -1 where unknown. The compiled side's
  /// workers are other processes: not counted. In a Python process (pt2diff.diff) these count Python's too.
  int64_t start_host_bytes = -1;
  int64_t peak_host_bytes = -1;
};

/// One stage of the diff's pipeline (engine/diff/stages.h), what it took: the measure of where a run's time
/// and memory go. Stages with nothing to do are listed too (seconds near 0).
struct StageRecord {
  std::string name;             ///< the stage's function: "run_references", "compile_graph", "judge_kernels", ...
  double seconds = 0;           ///< wall time, with the compiles started ahead of their stage (DiffOptions::overlap)
  int64_t peak_gpu_bytes = -1;  ///< the most the engine's GPU allocations held during the stage; -1 on the CPU
  int64_t host_bytes = -1;      ///< the engine process's resident memory when the stage ended (VmRSS); -1 where unknown
};

struct DiffResult {
  std::string graph;
  std::string inputs;      ///< where the inputs came from
  std::string compiled;    ///< the backend that played "compiled"
  RunDevices devices;
  ToleranceRule rule;
  std::vector<NodeError> nodes;       ///< topological order
  /// Indexes into `nodes` (at most DiffOptions::top): most compiled_vs_eager first, then most compiled
  /// local relative error; without an exploded compile, most eager local relative error first.
  std::vector<size_t> ranking;
  std::vector<OutputVerdict> outputs;
  std::vector<CompileRecord> compiles;
  /// The whole-graph compile's kernels, each buffer judged, from the verdict's own run (kernels.h).
  KernelTable kernels;
  /// Where the divergence comes from, when an output diverged and localization ran.
  std::optional<Localization> localization;
  /// The smallest eager set and the lines that leave it eager, when DiffOptions::workaround asked for it.
  std::optional<Workaround> workaround;
  /// The compiler's decision that makes the whole graph diverge (compiler_search.h), when the search ran.
  std::optional<CompilerSearch> compiler_search;
  /// Every node's compiled local error judged against eager's (the exploded compile's evidence).
  NodeVerdict node_verdict;
  std::vector<std::string> fixups;    ///< fp64 fix-ups applied ("aten.to.dtype: dtype bfloat16 -> float64")
  /// The graph's torch.autocast regions: the native run ran these nodes' bodies under autocast (its op
  /// lists chose each op's dtype), the fp64 run ignored its casts (a fix-up says so).
  std::vector<AutocastRegion> autocast;
  std::vector<std::string> not_comparable;
  std::vector<std::string> random_nodes;  ///< nodes drawing random numbers (same stream in every run)
  /// What limits this report, one line each (an op mutating values in place: no exploded compile and
  /// no localization, whose per-op inputs assume every value is written once).
  std::vector<std::string> warnings;
  bool diverged = false;              ///< some output failed the rule
  bool suspicious = false;            ///< some output is suspicious (the rule passes, Verdict::level)
  bool fail_on_suspicious = false;    ///< DiffOptions::fail_on_suspicious: suspicious outputs count as failing
  bool compiled_failed = false;       ///< a compile or compiled run failed (see `compiles`)
  /// A training step (docs/training.md) whose eager loss or a gradient is not finite: one line naming the output,
  /// the first node whose eager value is not finite, and what to do (also in `warnings`); empty otherwise. The CLI
  /// prints it on stderr and exits 2, after writing every report.
  std::string eager_nonfinite;
  double seconds = 0;
  /// The main job's stages in order, each one's time and memory (empty from explain() and the library's partial
  /// runs). RunDevices::peak_gpu_bytes is the most of theirs.
  std::vector<StageRecord> stages;
  /// The tensors behind the numbers (pt2diff/values.h, which needs torch): every output's compiled,
  /// eager and fp64 values, and with DiffOptions::keep_values every node's. Copies of a result share them.
  std::shared_ptr<DiffValues> values;
};

/// The run's level: fail when an output fails (or the compiler failed, or the node verdict fails),
/// suspicious when an output or the node verdict is, else pass.
Level result_level(const DiffResult& result);
/// Whether the run counts as failing: its level is fail, or suspicious and fail_on_suspicious. What the
/// CLI's exit code 1 and testing.h's assertions mean.
bool counts_as_failing(const DiffResult& result);

/// The readable report.
std::string to_text(const DiffResult& result);
/// One line on a compile's dynamic dims: "dynamic: x.size(0) in [2, 64]; no other guard", or "static: WHY; the
/// archive's dynamic dims x.size(0) (s77)" (the report's compiles block, the size sweep's header).
std::string shapes_line(const ShapeCompile& shapes);
/// The same as JSON (docs/report.schema.json, $defs/shape_compile).
std::string shapes_to_json(const ShapeCompile& shapes);
/// A few lines for a test failure or a log: each failing output with the rule's numbers, the culprit
/// (nodes, ops, source lines, module paths, errors), each hint's finding, summary and suggestion, the
/// repro command; or why the compiler failed. "agrees: ..." with the worst margin when nothing failed.
std::string to_summary(const DiffResult& result);
/// What a failing test prints (pt2diff/testing.h, Python's pt2diff.testing.assert_agrees): the line
/// "pt2diff: the compiled graph does not agree with the reference" and to_summary().
std::string to_failure_message(const DiffResult& result);
/// The report as JSON (docs/report.schema.json).
std::string to_json(const DiffResult& result);
/// The JSON schema of to_json()'s report, read off the same description of its fields as the writer
/// (engine/report/json_report.cpp); docs/report.schema.json is this text (JsonSchemas.AreTheDocsSchemas).
std::string report_json_schema();

}  // namespace pt2diff
