// graphs/search/oracle.h — what the search asks and what answers it. The phases only see this
// interface (tests answer with a fake); compiled_oracle.cpp answers with a backend and the verdict rule.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <optional>

#include "pt2diff/kernels.h"
#include "pt2diff/localize.h"
#include "pt2diff/verdict.h"
#include "pt2diff/workaround.h"

namespace pt2diff {

struct ProbeAnswer {
  bool fails = false;
  std::string value;    ///< the value that decided it
  Verdict verdict;
  Metrics compiled_to_fp64, eager_to_fp64;
  std::optional<FailureKind> failure;  ///< when the region could not be compiled or run
  bool compiled = false;  ///< this answer cost a compile
  double seconds = 0;
  double backend_seconds = 0;  ///< of `seconds`, the time inside the backend (compile and run)
};

/// Thrown by an oracle that can no longer answer (the worker died twice, or hung): localization
/// stops and says so instead of reading every later probe as a divergence.
struct OracleLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The cone of the failing outputs in topological order, positions 0..size()-1.
class RegionOracle {
 public:
  virtual ~RegionOracle() = default;
  virtual size_t size() const = 0;
  /// "c3..c7: 5 nodes, mul .. add_2".
  virtual std::string describe(size_t begin, size_t end) const = 0;
  /// Positions [0, end) compiled from the graph inputs, judged at every value they pass on.
  virtual ProbeAnswer prefix(size_t end) = 0;
  /// Positions [begin, end) fed with fp64 values rounded to their dtypes, judged at position end - 1.
  virtual ProbeAnswer window(size_t begin, size_t end) = 0;
  /// Cone position of the node that defines `value` (size() when it is not in the cone).
  virtual size_t position_of(const std::string& value) const = 0;
  /// Node names, targets, sources and module paths of positions [begin, end) (for the culprit).
  virtual void name_nodes(size_t begin, size_t end, Culprit& culprit) const = 0;
  virtual size_t compiles() const = 0;
};

/// The search over an oracle: phases 1 and 2 and the flakiness check (localizer.cpp).
/// `suspects` are cone positions the exploded compile flagged, in order; `on_step` hears
/// "first failing end, probe 3 of ~8" before each probe.
Localization localize(RegionOracle& oracle, const LocalizeOptions& options, const std::vector<size_t>& suspects,
                      const std::function<void(const std::string&)>& on_step);

/// The op inside a failing fused kernel (kernel_search.cpp). The oracle's positions are the kernel's nodes
/// the failing one depends on, graph order, the failing node last; `alone_fails(i)` says whether position i
/// compiled on its own fails (the exploded compile), nullopt when not known (then one more compile asks).
/// At most kernel_search_bound(size()) compiles, one more when an op's own answer is not known.
KernelCulprit search_kernel(RegionOracle& oracle, const std::string& kernel, const std::function<std::optional<bool>(size_t)>& alone_fails,
                            const std::function<void(const std::string&)>& on_step);
/// 1 + ceil(log2 nodes).
size_t kernel_search_bound(size_t nodes);

/// Answers the smallest eager set's one question: does the whole graph, compiled with these candidate
/// positions (sorted, 0..size()-1) left eager, pass the rule on every output? May throw OracleLost.
class EagerSetOracle {
 public:
  virtual ~EagerSetOracle() = default;
  virtual size_t size() const = 0;
  virtual bool passes(const std::vector<size_t>& eager) = 0;
};

/// What search_eager_set() found: positions of the oracle, sorted.
struct EagerSetSearch {
  Workaround::Conclusion conclusion = Workaround::Conclusion::BudgetExhausted;
  std::vector<size_t> eager;  ///< a set that passed (Found), else empty
  bool minimal = false;       ///< every position of `eager` was needed: leaving it compiled failed
  size_t compiles = 0;        ///< questions asked of the oracle (a set asked twice is asked once)
};

/// The smallest eager set (eager_set.cpp): starts from `start` (the culprit's positions), then splits
/// the other positions into segments in order, keeping a segment's halves only where leaving them
/// compiled fails. The empty set is taken to fail (the verdict did). Past `max_compiles` questions it
/// stops with the smallest passing set asked so far (minimal false). `on_step` hears each question.
EagerSetSearch search_eager_set(EagerSetOracle& oracle, const std::vector<size_t>& start, size_t max_compiles,
                                const std::function<void(const std::string&)>& on_step);

}  // namespace pt2diff
