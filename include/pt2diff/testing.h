// pt2diff/testing.h — pt2diff inside a GoogleTest suite: a compiled graph must agree with eager, fp64
// as referee, or the test fails naming the op, its source line, the hint and the numbers.
//
//   #include <pt2diff/testing.h>
//
//   TEST(Accuracy, ModelCompilesFaithfully) {
//     pt2diff::Program program = pt2diff::load_program("model.pt2");
//     pt2diff::DiffOptions options;                  // Inductor on CPU, the same() rule at tol 1e-3
//     options.fail_on_suspicious = true;             // also fail 100x farther from fp64 than eager
//     EXPECT_TRUE(pt2diff::agrees_with_reference(program, options));   // the archive's sample inputs
//     EXPECT_TRUE(pt2diff::agrees_with_reference("model.pt2", "inputs.pt", options));
//   }
//
// A failure prints pt2diff::to_summary(): each failing output with the rule's numbers, the culprit
// (node, op, source line, module path, errors), the hints (finding, summary, suggestion) and the repro
// command when DiffOptions::repro_dir is set. Bad files or graphs pt2diff cannot run fail the assertion
// with pt2diff's one-line error instead of throwing. Header-only: link GTest and pt2diff::pt2diff.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pt2diff/diff.h"
#include "pt2diff/error.h"
#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace pt2diff {

/// Runs diff() on `inputs`; success when no output diverges, the compiler did not fail and, with
/// DiffOptions::fail_on_suspicious, no output is suspicious (counts_as_failing()). Suspicious and vacuous
/// outputs are named in the message either way.
inline ::testing::AssertionResult agrees_with_reference(const Program& program, const BoundInputs& inputs,
                                                        const DiffOptions& options = {}) {
  try {
    const DiffResult r = diff(program, inputs, options);
    if (!counts_as_failing(r)) return ::testing::AssertionSuccess() << to_summary(r);
    return ::testing::AssertionFailure() << to_failure_message(r);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "pt2diff: " << e.what();
  }
}

/// The same on the archive's sample inputs (torch.export's example inputs, when it has them).
inline ::testing::AssertionResult agrees_with_reference(const Program& program, const DiffOptions& options = {}) {
  if (!program.sample_inputs)
    return ::testing::AssertionFailure() << "pt2diff: " << program.path << " has no sample inputs: pass BoundInputs or an inputs file";
  try {
    return agrees_with_reference(program, bind_inputs(program, *program.sample_inputs), options);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "pt2diff: " << e.what();
  }
}

/// The same from files: a torch.export archive and a torch.save file of its inputs.
inline ::testing::AssertionResult agrees_with_reference(const std::string& graph, const std::string& inputs,
                                                        const DiffOptions& options = {}) {
  try {
    const Program program = load_program(graph);
    return agrees_with_reference(program, bind_inputs(program, load_inputs(inputs)), options);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "pt2diff: " << e.what();
  }
}

}  // namespace pt2diff
