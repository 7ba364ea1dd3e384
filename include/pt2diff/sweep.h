// pt2diff/sweep.h — tolerance sweeps: one set of runs (eager, fp64, compiled, exploded), judged at
// every tolerance of a grid, so the tolerance a graph needs is measured instead of guessed.
//
//   pt2diff::SweepOptions o;
//   o.tols = pt2diff::parse_tolerances("1e-7:1e-1:13");   // 13 points, log-spaced
//   pt2diff::SweepResult s = pt2diff::sweep(program, inputs, o);
//   for (size_t i = 0; i < s.run.outputs.size(); ++i)
//     std::cout << s.run.outputs[i].name << " passes from tol " << s.min_passing_tol[i][0].value_or(-1) << "\n";
//
// Judging is re-done per point on the values kept from the one run; nothing is recompiled. With
// `localize`, each point where an output fails is localized through one shared backend that compiles
// every region once, so later points reuse the probes' compiles (their runs are repeated).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/diff.h"

namespace pt2diff {

struct SweepOptions {
  /// The runs: compiler, rule kind (same or allclose: the kinds --tol means something to), exploded.
  DiffOptions diff;
  /// The tolerance axis (parse_tolerances). Must not be empty.
  std::vector<double> tols;
  /// The multiplier axis: each value replaces both the fp32 and the low-precision multiplier of the
  /// same() rule. Empty: the rule's own multipliers only.
  std::vector<double> multipliers;
  /// Localize at every point where an output fails (probes' compiles are shared between points), and
  /// with `diff.localize_suspicious` where one is suspicious.
  bool localize = false;
};

struct SweepPoint {
  double tol = 0;
  double multiplier = 0;               ///< 0: the rule's own multipliers
  std::vector<Verdict> outputs;        ///< one per SweepResult::run.outputs
  size_t failing_outputs = 0;
  size_t suspicious_outputs = 0;       ///< outputs the rule passes at this point whose level is suspicious
  /// Nodes whose compiled local result (exploded compile) fails the rule against their eager local
  /// result, fp64 as referee: where the compiler introduces error beyond this tolerance.
  size_t local_failures = 0;
  /// Nodes whose eager value, propagated from the graph inputs, is not allclose to fp64 at
  /// atol = rtol = tol: where the graph's own precision has drifted past this tolerance.
  size_t propagated_failures = 0;
  /// The first node in graph order whose compiled local result fails; empty when none does.
  std::string first_diverging;
  std::optional<Localization> localization;  ///< with SweepOptions::localize, where an output fails
};

struct SweepResult {
  DiffResult run;                      ///< the one set of runs (values kept), judged at the rule's own tol
  std::vector<double> multipliers;     ///< the multiplier axis as swept (0: the rule's own)
  std::vector<SweepPoint> points;      ///< multiplier-major, then tol ascending
  /// Per output, per multiplier: the smallest tolerance at which the output passes (found by
  /// bisection on the kept values to 0.1% relative), nullopt when none up to 1e3 does.
  std::vector<std::vector<std::optional<double>>> min_passing_tol;
  size_t compiles = 0;                 ///< compiles the whole sweep asked of the compiler
  double run_seconds = 0;              ///< the one set of runs
  double judge_seconds = 0;            ///< judging every point (and the bisections)
  double localize_seconds = 0;
};

/// "LO:HI:N" (N log-spaced points from LO to HI) or "A,B,C". Throws pt2diff::Error(Usage) with the
/// form expected when `spec` is neither, or a value is not positive.
std::vector<double> parse_tolerances(const std::string& spec);

/// Runs once and judges every point. Throws pt2diff::Error(Usage) for an empty grid or a rule kind
/// that --tol does not affect (ulp, cosine, relative).
SweepResult sweep(const Program& program, const BoundInputs& inputs, const SweepOptions& options);

/// A table for the terminal: one row per point, then the minimum passing tolerance per output.
std::string sweep_to_text(const SweepResult& result);
/// One row per (point, output): tol, multiplier, output, pass, reason, failing counts, first diverging node.
std::string sweep_to_csv(const SweepResult& result);
/// docs/sweep.schema.json.
std::string sweep_to_json(const SweepResult& result);
/// The JSON schema of sweep_to_json(), read off the description the writer writes by (engine/report/sweep_report.cpp);
/// docs/sweep.schema.json is this text (JsonSchemas.AreTheDocsSchemas).
std::string sweep_json_schema();
/// An SVG plot: failing outputs and failing node counts against the tolerance (log axis), with each
/// output's minimum passing tolerance marked.
std::string sweep_to_svg(const SweepResult& result);

}  // namespace pt2diff
