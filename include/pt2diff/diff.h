// pt2diff/diff.h — the main job: run a program three ways and say where and how much they disagree.
//
//   pt2diff::Program program = pt2diff::load_program("graph.pt2");
//   pt2diff::BoundInputs in = pt2diff::bind_inputs(program, pt2diff::load_inputs("inputs.pt"));
//   pt2diff::DiffResult r = pt2diff::diff(program, in, {});
//   for (const auto& out : r.outputs) std::cout << out.name << ": " << out.verdict.reason << "\n";
//   std::cout << pt2diff::to_text(r);   // or to_json(r): docs/report.schema.json
//
// This header needs no torch: the options are in options.h, the results in results.h, and the program
// and its inputs are only named here (program.h and inputs.h load them).
#pragma once

#include <string>
#include <vector>

#include "pt2diff/hints.h"
#include "pt2diff/options.h"
#include "pt2diff/results.h"

namespace pt2diff {

struct Program;      // pt2diff/program.h
struct BoundInputs;  // pt2diff/inputs.h
class Backend;       // pt2diff/advanced/backend.h

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

/// The device a diff of `program` runs on unless BackendOptions::device says otherwise: the device it
/// was exported on when this machine's libtorch has it ("cuda:0"), else "cpu".
std::string default_device(const Program& program);

}  // namespace pt2diff
