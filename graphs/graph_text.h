// graphs/graph_text.h — a readable text form of the IR (for `inspect --graph`, tests and errors).
#pragma once

#include <string>

#include "pt2diff/graph.h"

namespace pt2diff {

/// One line per node: `%out: float32[4, 64] = aten.linear.default(%x, %w, bias=%b)`; subgraphs indented.
std::string to_graph_text(const Graph& graph, int indent = 0);
/// One argument as text: `%x`, `[2, 3]`, `float32`, `None`, `{true_graph_0}`.
std::string argument_text(const Graph& graph, const Argument& arg);
/// `torch.ops.aten.add.Tensor` → `aten.add.Tensor`; other targets unchanged.
std::string short_target(const std::string& target);

}  // namespace pt2diff
