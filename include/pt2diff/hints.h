// pt2diff/hints.h — why a culprit diverges, each answer backed by an experiment the engine ran.
//
//   for (const pt2diff::Hint& h : result.localization->hints)
//     std::cout << h.kind << ": " << h.summary << "\n  -> " << h.suggestion << "\n";
//
// Hints come from counterfactual runs of the culprit window, never from an op's name alone:
// dtype_promotion compares the compiled result with the window computed with fp32 intermediates
// (fused-kernel semantics) and with lower-precision rounding; compiler_lever re-compiles the window
// with a lever (emulate_precision_casts) and says whether the divergence goes away.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pt2diff {

struct Hint {
  std::string kind;        ///< "dtype_promotion", "reduction_order", "compiler_lever"
  /// Stable: "compiled_keeps_higher_precision", "lower_precision_than_promotion", "promotion_differs_from_pytorch",
  /// "not_explained_by_promotion",
  /// "inside_envelope", "outside_envelope", "below_envelope", "lever_removes_divergence", "lever_does_not_remove_divergence".
  std::string finding;
  std::string summary;     ///< one sentence with the numbers
  std::string suggestion;  ///< what a user can do about it
  std::vector<std::pair<std::string, double>> evidence;  ///< the numbers, named ("rmse_compiled_to_widened", ...)
  /// Per-op facts behind the numbers, one line each: each op's dtype promotion, each reduction and its
  /// length, each lever and its verdict.
  std::vector<std::string> notes;
};

/// The hints as `pt2diff explain` prints them: per hint "KIND (FINDING): SUMMARY", the suggestion, the
/// notes and the evidence; "no experiment applies ..." when there are none.
std::string hints_to_text(const std::vector<Hint>& hints);
/// The hints as a JSON array, each as in docs/report.schema.json's localization.hints.
std::string hints_to_json(const std::vector<Hint>& hints);

}  // namespace pt2diff
