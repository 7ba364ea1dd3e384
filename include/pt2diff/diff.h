// pt2diff/diff.h — the main job: run a program three ways and say where and how much they disagree.
//
//   pt2diff::Program program = pt2diff::load_program("graph.pt2");
//   pt2diff::BoundInputs in = pt2diff::bind_inputs(program, pt2diff::load_inputs("inputs.pt"));
//   pt2diff::DiffResult r = pt2diff::diff(program, in, {});
//   for (const auto& out : r.outputs) std::cout << out.name << ": " << out.verdict.reason << "\n";
//   std::cout << pt2diff::to_text(r);   // or to_json(r): docs/report.schema.json
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/backend.h"
#include "pt2diff/compare.h"
#include "pt2diff/inputs.h"
#include "pt2diff/localize.h"
#include "pt2diff/program.h"

namespace pt2diff {

struct DiffOptions {
  /// The compiled side, a make_backend() spec: "inductor" (default), "eager" (the noise floor: every
  /// verdict passes), "aoti:PACKAGE.pt2", "external:COMMAND", "fault:NODE:KIND".
  std::string compiled = "inductor";
  /// Device, Inductor config, timeout, worker Python, cache, progress callback.
  BackendOptions backend;
  /// Also compile every node as an independent op (one compile) for the compiled local error column.
  bool exploded = true;
  /// When an output diverges: bisect the graph to the op or window that causes it (localize.h).
  LocalizeOptions localize;
  /// When localization names a culprit, write it here as a standalone repro (localize.h: Repro).
  std::string repro_dir;
  ToleranceRule rule;
  /// How many nodes the ranking of introduced error lists.
  size_t top = 10;
  /// Keep every node's values (ValueError::*_value) for re-judging later (sweeps): memory grows with
  /// the graph, so off by default.
  bool keep_values = false;
};

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
  /// With DiffOptions::keep_values: the eager (propagated), fp64, eager local and compiled local values.
  at::Tensor eager_value, fp64_value, local_value, compiled_local_value;
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
  std::string name;
  std::string role;      ///< "user_output", "buffer_mutation of running_mean", ...
  Verdict verdict;       ///< compiled vs eager, fp64 as referee ("no_compiled_value" when the compiler failed)
  Metrics compiled_to_fp64;
  Metrics eager_to_fp64;
  at::Tensor compiled_value, eager_value, fp64_value;  ///< the values judged (undefined where a run has none)
};

struct DiffResult {
  std::string graph;
  std::string inputs;      ///< where the inputs came from
  std::string compiled;    ///< the backend that played "compiled"
  ToleranceRule rule;
  std::vector<NodeError> nodes;       ///< topological order
  std::vector<size_t> ranking;        ///< indexes into `nodes`, most local error first (at most DiffOptions::top)
  std::vector<OutputVerdict> outputs;
  std::vector<CompileRecord> compiles;
  /// Where the divergence comes from, when an output diverged and localization ran.
  std::optional<Localization> localization;
  std::vector<std::string> fixups;    ///< fp64 fix-ups applied ("aten.to.dtype: dtype bfloat16 -> float64")
  std::vector<std::string> not_comparable;
  std::vector<std::string> random_nodes;  ///< nodes drawing random numbers (same stream in every run)
  /// What limits this report, one line each (an op mutating values in place: no exploded compile and
  /// no localization, whose per-op inputs assume every value is written once).
  std::vector<std::string> warnings;
  bool diverged = false;              ///< some output failed the rule
  bool compiled_failed = false;       ///< a compile or compiled run failed (see `compiles`)
  double seconds = 0;
};

/// Runs the three ways and compares. Throws pt2diff::Error for inputs or graphs it cannot run; a
/// compiler that fails, crashes or hangs is recorded in the result (`compiles`, `compiled_failed`).
DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options);
/// The same with a backend the caller made (options.compiled and options.backend are not used to
/// make one): a sweep shares one backend, and its compiled regions, between runs.
DiffResult diff(const Program& program, const BoundInputs& inputs, const DiffOptions& options, Backend& backend);
/// The hint experiments (hints.h) on one node or a window, culprit or not, fed the fp64 values of its
/// inputs rounded to their dtypes, compiled with `options.compiled`. The window runs from `first` to
/// `last` (empty: `first` alone): the nodes between them in graph order that `last` depends on,
/// fused; the hints judge `last`'s first floating output. Throws pt2diff::Error(Usage) for an unknown
/// node or a `last` that comes before `first`.
std::vector<Hint> explain(const Program& program, const BoundInputs& inputs, const std::string& first, const DiffOptions& options,
                          const std::string& last = "");

/// The flags of `pt2diff GRAPH INPUTS` that run the CLI with `options` again: every option that differs
/// from the CLI's default, spelled as the CLI reads it ({"--compiled", "fault:mm#1:bf16", "--tol",
/// "1e-06"}). `default_device` is what --device would default to (the graph's export device). Where
/// results go (--json, --html, --repro, --inductor-cache) and callbacks are left out: they change no
/// verdict. A repro command, or a test harness's log, is these flags after GRAPH INPUTS.
std::vector<std::string> to_flags(const DiffOptions& options, const std::string& default_device = "cpu");
/// Words as one line a POSIX shell reads back as the same words (single quotes where needed).
std::string shell_line(const std::vector<std::string>& words);

/// The readable report.
std::string to_text(const DiffResult& result);
/// A few lines for a test failure or a log: each failing output with the rule's numbers, the culprit
/// (nodes, ops, source lines, module paths, errors), each hint's finding, summary and suggestion, the
/// repro command; or why the compiler failed. "agrees: ..." with the worst margin when nothing failed.
std::string to_summary(const DiffResult& result);
/// The report as JSON (docs/report.schema.json).
std::string to_json(const DiffResult& result);

}  // namespace pt2diff
