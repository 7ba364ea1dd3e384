// graphs/inline_region.h — a top-level torch.autocast region (wrap_with_autocast) inlined into its graph,
// so that localization can reach the ops of its body: each body op becomes a top-level node that runs
// under the region's autocast. This is the one inliner: the worker is sent what it decided (inlined_regions:
// each body op's name once inlined) and builds that graph from it, replying with what it built, which
// the engine checks against this graph (python/pt2diff_worker/regions.py: inline_autocast;
// docs/worker-protocol.md). Torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// Node::metadata key on an inlined node: the autocast it runs under, "DEVICE_TYPE,DTYPE,ENABLED,CACHE"
/// ("cpu,bfloat16,1,0"). The interpreter's native runs honor it; its fp64 runs ignore the casts.
inline constexpr const char* kAutocastMetadata = "pt2diff_autocast";
/// Node::metadata key on an inlined node: the name of the wrap_with_autocast node it came from.
inline constexpr const char* kInlinedFromMetadata = "pt2diff_inlined_from";
/// Node::metadata keys on an inlined node: its name in the region's body, and the body's names of its output
/// values, comma-separated in output order.
inline constexpr const char* kBodyNameMetadata = "pt2diff_body_name";
inline constexpr const char* kBodyValuesMetadata = "pt2diff_body_values";

/// The name a body node or value `name` of region `region` takes once inlined: itself, or
/// "<name>_<region>" when the top-level graph already uses it.
std::string inlined_name(const std::string& name, const std::string& region, bool taken);

/// `ir` with its top-level wrap_with_autocast node `region` replaced by the body's nodes, in order, each
/// tagged with kAutocastMetadata and kInlinedFromMetadata. The values the body returns take the names of
/// the region's outputs; other body names keep theirs unless the top-level graph uses them
/// (inlined_name). nullopt, and `why` set, when that cannot be done: `region` is not an autocast region
/// of the top-level graph, an operand is a literal, the body returns one of its inputs or a value twice,
/// or a renamed body name is taken.
std::optional<ExportedGraph> inline_autocast_region(const ExportedGraph& ir, NodeId region, std::string& why);

/// The regions inlined into `graph` (from kInlinedFromMetadata and kBodyNameMetadata), sorted by name:
/// what the worker is told to build (the load request's inline_autocast).
std::vector<InlinedRegion> inlined_regions(const Graph& graph);

}  // namespace pt2diff
