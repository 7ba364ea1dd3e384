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

/// One compile the run asked for, and how it went.
struct CompileRecord {
  std::string what;          ///< "graph" (the whole graph, fused) or "exploded" (every op on its own)
  size_t nodes = 0;
  bool ok = false;
  std::optional<FailureKind> failure;  ///< why it failed, when !ok (failure_kind_name() prints it)
  std::string message;       ///< the compiler's or worker's message, one line
  double compile_seconds = 0;
  double run_seconds = 0;
};

struct OutputVerdict {
  std::string name;  ///< verdict.level: pass, suspicious, fail; verdict.blind_spot: a rule blind to 1% here
  std::string role;      ///< "user_output", "buffer_mutation of running_mean", ...
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
  double seconds = 0;
  /// The tensors behind the numbers (pt2diff/values.h, which needs torch): every output's compiled,
  /// eager and fp64 values, and with DiffOptions::keep_values every node's. Copies of a result share them.
  std::shared_ptr<DiffValues> values;
};

/// The run's level: fail when an output fails (or the compiler failed), suspicious when one is, else pass.
Level result_level(const DiffResult& result);
/// Whether the run counts as failing: an output fails, the compiler failed, or an output is suspicious
/// and fail_on_suspicious. What the CLI's exit code 1 and testing.h's assertions mean.
bool counts_as_failing(const DiffResult& result);

/// The readable report.
std::string to_text(const DiffResult& result);
/// A few lines for a test failure or a log: each failing output with the rule's numbers, the culprit
/// (nodes, ops, source lines, module paths, errors), each hint's finding, summary and suggestion, the
/// repro command; or why the compiler failed. "agrees: ..." with the worst margin when nothing failed.
std::string to_summary(const DiffResult& result);
/// What a failing test prints (pt2diff/testing.h, Python's pt2diff.testing.assert_agrees): the line
/// "pt2diff: the compiled graph does not agree with the reference" and to_summary().
std::string to_failure_message(const DiffResult& result);
/// The report as JSON (docs/report.schema.json).
std::string to_json(const DiffResult& result);

}  // namespace pt2diff
