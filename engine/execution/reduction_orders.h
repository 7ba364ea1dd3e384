// engine/execution/reduction_orders.h — a reduction node recomputed in another summation order with
// its own kernel: reversed along the reduction, or in blocks whose partial results are summed in the
// output dtype. The fault backend plants the reversed order; the reduction-order hint builds its
// envelope from all of them.
#pragma once

#include <optional>
#include <vector>

#include "pt2diff/graph.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {

/// Ops this file can reorder, by name without namespace and overload ("mm", "sum", "_softmax", ...).
const std::vector<std::string>& reorderable_ops();
/// "aten.mm.default" → "mm".
std::string reduction_op_name(const Node& node);
/// The number of terms each output element sums (K of a matmul, the reduced elements of a sum); 0 if unknown.
int64_t reduction_length(const Node& node, const std::vector<c10::IValue>& inputs);
/// The node recomputed with its reduction walked in reverse.
std::vector<c10::IValue> reversed_order(const Node& node, NodeCall& call);
/// How blocked_order adds its partial results: one after the other, or in a balanced binary tree
/// (pairwise summation, as NumPy and most GPU reductions do).
enum class Combine { Sequential, Pairwise };

/// The node recomputed in blocks of `block` terms, partial results combined in the output dtype
/// (softmax: in its accumulation dtype); nullopt when the reduction is not longer than one block
/// or the op has no blocked form (grouped or transposed convolutions).
std::optional<std::vector<c10::IValue>> blocked_order(const Node& node, NodeCall& call, int64_t block,
                                                      Combine combine = Combine::Sequential);

/// The RMS error (over the output elements) that summing `x`'s reduction one term after the other in a
/// dtype of unit roundoff `u` is expected to make: each addition rounds its partial sum S_k with an error
/// uniform in ±u·|S_k|, so the error is u/√3 · sqrt(Σ_k S_k²) per output element (a mean: divided by N).
/// A serial loop is the order a compiler's scalar reduction walks; it can be several times farther from
/// fp64 than ATen's cascade sum where the terms cancel (a sum far smaller than its terms), and it is still
/// correct. For sum and mean (`x`: the op's input, any floating dtype, read in fp64); nullopt for other ops.
std::optional<double> serial_sum_error(const Node& node, const at::Tensor& x, double u);

}  // namespace pt2diff
