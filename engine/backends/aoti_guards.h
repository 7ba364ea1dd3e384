// engine/backends/aoti_guards.h — the checks AOTInductor's users run first, done for them: every input
// against the guards a package was compiled with (AOTI_RUNTIME_CHECK_INPUTS=1 checks dtype, sizes,
// dynamic ranges, strides and device type, and stops at the first), one line per violation naming the
// input, before the package runs; and the package's own guard messages ("input_handles[1]: unmatched
// stride value at 0, ...") rewritten to name the input.
#pragma once

#include <ATen/core/Tensor.h>
#include <string>
#include <vector>

#include "pt2diff/program.h"

namespace pt2diff {

/// The program's user inputs, in the order a package built from it takes them (its input_handles).
std::vector<ValueId> package_input_values(const Program& program);

/// Every way `inputs` (one per package_input_values()) break the guards of a package compiled from
/// `program` for `device_type` ("cpu", "cuda"): dtype, rank, static sizes, the ranges of dynamic dims
/// (range_constraints), static strides and device type, as AOTInductor's generated check_inputs tests
/// them. One line each ("input 'x' has strides [1, 4], the package was compiled for [8, 1]: ...").
std::vector<std::string> package_guard_violations(const Program& program, const std::vector<at::Tensor>& inputs,
                                                  const std::string& device_type);

/// A package's own guard failure ("input_handles[1]: unmatched dim value at 0, expected: 4, but got: 6")
/// with the input named ("input 'y' (input_handles[1]): unmatched dim value at 0, ..."); other messages
/// unchanged.
std::string name_package_guard_failure(const std::string& message, const Program& program);

}  // namespace pt2diff
