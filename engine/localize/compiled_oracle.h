// engine/localize/compiled_oracle.h — answers probes with a backend and the verdict rule.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graphs/search/oracle.h"
#include "pt2diff/compare.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/storage_model.h"
#include <map>
#include <optional>

namespace pt2diff {

/// Every value of one run, indexed by ValueId: the eager (native) run and the fp64 run (None for the graph
/// inputs, which the fp64 run casts when read). What a window is fed at its boundary, the fp64 values rounded
/// to their native dtypes, is made when asked: kept, it would be a third copy of every value (12 bytes per
/// bf16 element instead of 10; more where views would each have been rounded to a tensor of their own).
/// The fp64 values of cheap nodes (Interpreter::reruns_exactly) may be dropped and made again when asked:
/// read fp64 values with fp64_of(), never `fp64` directly.
struct ReferenceRuns {
  std::vector<c10::IValue> eager, fp64;
  /// Rounded values do not share memory with each other (an op of the graph writes into its inputs).
  bool separate = false;
  /// By ValueId: the fp64 value was not kept (its slot in `fp64` is None); `rerun` makes it again.
  std::vector<char> dropped;
  const Graph* graph = nullptr;
  /// Interpreter::rerun_fp64 of the run: a node's fp64 outputs from its inputs' fp64 values.
  std::function<std::vector<c10::IValue>(NodeId, const std::function<c10::IValue(ValueId)>&)> rerun;

  /// The fp64 run's value of `value`: kept, or made again from the kept values it derives from.
  c10::IValue fp64_of(ValueId value) const;

  // Where the graph writes in place (StorageModel): a kept value is the value as its node made it; a later write
  // into its storage is kept as a version of that storage, and a read after the write sees the version.
  const StorageModel* storage = nullptr;  ///< null, or a model where nothing writes: every read is the kept value
  /// A written storage after one node's write, whole and flat (its bytes as a 1-D tensor of the value's dtype), in
  /// the eager and fp64 runs.
  struct Version {
    at::Tensor eager, fp64;
  };
  std::map<std::pair<NodeId, ValueId>, Version> versions;  ///< (writer, root)
  /// Where a value of a written storage lies in it, in each run.
  struct Geometry {
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
  };
  std::vector<std::optional<Geometry>> eager_geometry, fp64_geometry;  ///< by ValueId

  /// The write into `value`'s storage that a reader at node `reader` (graph order; the node count for the graph's
  /// end) sees, when that is not the value as made.
  std::optional<NodeId> write_seen(ValueId value, NodeId reader) const;
  /// `value` as `reader` sees it, in the eager run and in the fp64 run (fp64_of() when no write intervenes).
  c10::IValue eager_as_read(ValueId value, NodeId reader) const;
  c10::IValue fp64_as_read(ValueId value, NodeId reader) const;
  /// `value` as it stands after `writer` wrote its storage (writer >= its last write), in each run.
  c10::IValue eager_after(ValueId value, NodeId writer) const;
  c10::IValue fp64_after(ValueId value, NodeId writer) const;
  /// What `region` is fed: each input as the first region node reading it sees it, fp64 rounded to its eager dtype
  /// (rounded(region.inputs) where nothing writes).
  std::vector<c10::IValue> region_inputs(const RegionSpec& region) const;
  /// The fp64 value of `region`'s output `value` when the region ends: after the region's last write into its
  /// storage, else as its first reader in the region sees it (an input), else as made.
  c10::IValue region_fp64(const RegionSpec& region, ValueId value) const;
  /// The same for the eager run (a prefix of the graph is judged against eager's values).
  c10::IValue region_eager(const RegionSpec& region, ValueId value) const;

  /// The fp64 values of `values` rounded to their eager dtypes, in order; a value without an fp64 tensor
  /// (a graph input, a symbol) is its eager value. Rounding is elementwise, so views of one fp64 tensor
  /// come back as the same views of one rounded tensor (unless `separate`): one rounding per storage, and
  /// the views share it as eager's do.
  std::vector<c10::IValue> rounded(const std::vector<ValueId>& values) const;
  c10::IValue rounded(ValueId value) const { return rounded(std::vector<ValueId>{value}).front(); }
};

/// The ancestors of `failing` (values) in topological order: everything that can change them. With a `storage`
/// where nodes write in place, the writes the cone's reads see and the reads its writes follow count as ancestors,
/// and a failing graph input (its value after the graph) starts at the nodes writing it.
std::vector<NodeId> failing_cone(const Graph& graph, const std::vector<ValueId>& failing, const StorageModel* storage = nullptr);

/// `suspicious_fails`: a suspicious value (Verdict::level) fails a probe, as a failing one does
/// (DiffOptions::localize_suspicious).
std::unique_ptr<RegionOracle> make_compiled_oracle(const Program& program, Backend& backend, const Interpreter& interpreter,
                                                   const ReferenceRuns& refs, std::vector<NodeId> cone,
                                                   std::set<ValueId> uncomparable, const ToleranceRule& rule,
                                                   bool suspicious_fails = false);

}  // namespace pt2diff
