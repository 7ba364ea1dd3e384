// pt2diff/kernels.h — the kernel table: what the compiled code of the whole graph materialized, kernel by
// kernel, each buffer judged against the eager and fp64 values of the exported node it computes, from the
// same compile and run that gave the verdict (no extra compile). Plain data, no torch.
//
//   const pt2diff::KernelTable& t = result.kernels;          // DiffResult::kernels (results.h)
//   if (!t.available) std::cout << "no kernel map: " << t.unavailable << "\n";
//   else if (t.first_failing >= 0) std::cout << t.kernels[t.first_failing].name << "\n";
//
// How the buffers are observed (Inductor's Python wrapper, instrumented by the worker) and what each torch
// version gives: docs/kernel-map.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pt2diff/verdict.h"

namespace pt2diff {

/// One buffer a kernel wrote, as the compiled code left it right after that kernel.
struct KernelBuffer {
  std::string buffer;      ///< the compiler's name ("buf3")
  std::string node;        ///< the exported node whose value it is; empty: an internal step of `part_of`
  std::string part_of;     ///< the exported node it was computed for (empty: the compiler did not say)
  std::string value;       ///< the graph value it was judged as (a multi-output node's part); empty: not judged
  std::string dtype, shape;
  bool judged = false;     ///< false: `why_not` says why (an internal step, another dtype or size, no fp64)
  std::string why_not;
  bool reshaped = false;   ///< the buffer has the value's elements in another shape (addmm's 2-D for linear's 3-D)
  bool pass = true;        ///< the rule's verdict against eager, fp64 as referee (judged only)
  Verdict verdict;
  Metrics metrics;         ///< against fp64
  int64_t nonfinite = 0;   ///< NaN and Inf elements in the buffer
};

/// One call of a compiled kernel: the exported nodes fused into it and the buffers it wrote.
struct KernelCall {
  std::string name;                ///< "cpp_fused_relu_0", "extern_kernels.addmm", "triton_poi_fused_add_0"
  std::vector<std::string> nodes;  ///< exported nodes whose computation it holds (graph order)
  std::vector<KernelBuffer> buffers;
  bool fails = false;              ///< a judged buffer fails the rule
};

/// The kernel table of the whole-graph compile.
struct KernelTable {
  bool asked = false;          ///< the run asked for it (DiffOptions::kernel_map and a compile that ran)
  bool available = false;      ///< the compiled code was observed
  std::string unavailable;     ///< why not, one line (AOTI, an external worker, cpp_wrapper, CUDA graphs, ...)
  std::vector<KernelCall> kernels;  ///< in the order the compiled code called them
  /// Index into `kernels` of the first suspect: the kernel that wrote the failing buffer earliest in
  /// graph order (the exported node's position), -1 when every judged buffer passes.
  int64_t first_failing = -1;
  std::string first_failing_node;  ///< the exported node that buffer computes
  /// Index into `kernels` of the first kernel that wrote a NaN or Inf (call order), -1 when none did.
  int64_t first_nonfinite = -1;
  size_t judged = 0, observed = 0;
  int64_t observed_bytes = 0;  ///< bytes of the buffers copied out of the compiled run
};

}  // namespace pt2diff
