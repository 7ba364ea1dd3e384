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
#include <optional>
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
  /// The kernel's generated source as the compiler wrote it (C++ for cpp_*, Triton for triton_*); empty
  /// for extern kernels and ATen fallbacks, which have none, and for a worker that does not give it.
  std::string code;
};

/// The op inside the first failing kernel (localize_kernel, graphs/search/kernel_search.cpp): its
/// nodes up to the failing one, compiled as regions from fp64-exact inputs, bisected over where the
/// region ends, in at most 1 + ceil(log2 |nodes|) compiles.
struct KernelCulprit {
  /// "single_op": `op` fails compiled on its own; "fused": `op` fails compiled after `fused_with` and
  /// passes alone; "inconclusive": the kernel's nodes compiled from exact inputs pass (`summary` says why).
  std::string kind;
  std::string kernel;                   ///< the kernel's name
  std::vector<std::string> nodes;       ///< the kernel's nodes searched (graph order, ending at the failing one)
  std::string op;                       ///< the first node whose value fails (empty when inconclusive)
  std::string target, source, module_path;  ///< of `op`
  std::vector<std::string> fused_with;  ///< the kernel's nodes before `op` in the failing region ("fused")
  std::string summary;                  ///< one line: "kernel K (nodes ...): op X diverges"
  size_t compiles = 0, bound = 0;       ///< compiles spent, and the bound 1 + ceil(log2 |nodes|)
  double seconds = 0;                   ///< the search's wall time (its compiles and runs)
  std::string code_file;                ///< the kernel's generated code, saved beside the repro (DiffOptions::repro_dir)
};

/// Where the first NaN or Inf of the compiled code comes from.
struct NonfiniteOrigin {
  /// "input": a graph input already holds it; "model": eager computes it too (at `node`); "compiler": the
  /// compiled `node` makes it from finite values (its exploded compile, fed finite fp64 values rounded to
  /// their dtypes, makes it as well) while eager does not; "compiled_code": the kernel writes it but the
  /// node alone, compiled, does not: it comes from how the kernel fuses or orders its nodes.
  std::string kind;
  std::string kernel;  ///< the first kernel call writing it
  std::string node;    ///< the exported node of the first buffer holding it (or the input)
  std::string detail;  ///< one line, the numbers
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
  /// Set when a compiled buffer holds a NaN or Inf (trace_nonfinite, after the exploded compile).
  std::optional<NonfiniteOrigin> nonfinite_origin;
  /// The op inside the first failing kernel, when localization is on and the backend compiles regions.
  std::optional<KernelCulprit> inside;
  size_t judged = 0, observed = 0;
  int64_t observed_bytes = 0;  ///< bytes of the buffers copied out of the compiled run
};

}  // namespace pt2diff
