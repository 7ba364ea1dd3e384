// engine/diff/node_ratio.h — how many times farther from fp64 a node's compiled local result is than
// eager's: the number the node verdict (judge_nodes) and the ranking (compile_exploded) both read.
#pragma once

#include "engine/diff/run_state.h"

namespace pt2diff {

/// error_ratio(ve.compiled_local, ve.local), its floor raised for a float32/float64 sum or mean to the
/// error a serial loop over the same terms is expected to make (serial_sum_error()): where the terms
/// cancel, the result is far smaller than they are, and a scalar loop (Inductor's reduction on a CPU
/// without vector ISA) lands several times farther from fp64 than ATen's cascade sum while being
/// correct. Other ops, and bf16/fp16 reductions (accumulated in fp32; their output rounding dominates),
/// keep error_ratio()'s floor. `n` is the node defining `ve`; its input terms are the kept fp64 values
/// rounded as they are fed to the exploded compile (ReferenceRuns::rounded).
double compiled_local_ratio(const RunState& s, const Node& n, const ValueError& ve);

}  // namespace pt2diff
