// pt2diff/region.h — a region of the graph: what a backend compiles and the interpreter runs alone.
//
//   pt2diff::RegionSpec whole = pt2diff::RegionSpec::whole_graph(program.ir);
//   pt2diff::RegionSpec window = pt2diff::RegionSpec::fused(program.ir.graph, {n3, n4}, {v7});
//   pt2diff::RegionSpec ops = pt2diff::RegionSpec::exploded_ops(program.ir.graph, {n3, n4});
//
// The engine's common vocabulary: backends compile regions (pt2diff/advanced/backend.h), the interpreter
// runs them (pt2diff/advanced/interpreter.h), localization's probes are regions. Part of the IR layer:
// no torch (implemented in graphs/region_spec.cpp, in pt2diff_ir).
#pragma once

#include <string>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// A piece of the graph to compile on its own: nodes, the values fed in and the values wanted out.
struct RegionSpec {
  std::vector<NodeId> nodes;     ///< sorted by id (topological order)
  std::vector<ValueId> inputs;   ///< the values the region reads; run() takes one value per entry
  std::vector<ValueId> outputs;  ///< the values the region returns, in this order
  /// Exploded: every node reads its inputs from `inputs`, never from another node of the region, so
  /// one compile gives every op's result on inputs of the caller's choosing (its *local* error).
  bool exploded = false;
  /// Ask for the kernel map: the buffers the compiled code writes, observed during run()
  /// (CompiledRegion::kernel_map()). Backends that cannot give one ignore it and say why there.
  bool observe = false;
  /// Nodes of `nodes` the compiler leaves to eager PyTorch, as `torch.compiler.disable` does in a user's
  /// program: the graph breaks around each and the rest is compiled (the smallest eager set,
  /// workaround.h). Sorted by id. Backends whose leaves_eager() is false refuse a region that has any.
  std::vector<NodeId> eager;

  /// The whole graph: inputs are the graph inputs that carry a value, outputs the graph outputs.
  static RegionSpec whole_graph(const ExportedGraph& ir);
  /// `nodes` fused as one program; inputs are the values they read from outside, outputs `outputs`.
  static RegionSpec fused(const Graph& graph, std::vector<NodeId> nodes, std::vector<ValueId> outputs);
  /// `nodes` as independent ops: inputs are every value any of them reads, outputs every value they define.
  static RegionSpec exploded_ops(const Graph& graph, std::vector<NodeId> nodes);
  /// "42 nodes, linear .. relu_3": what a user reads in progress lines and messages.
  std::string describe(const Graph& graph) const;
};

}  // namespace pt2diff
