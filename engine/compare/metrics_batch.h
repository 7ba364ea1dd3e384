// engine/compare/metrics_batch.h — measure() of many values with one copy to the host for all of them.
#pragma once

#include <ATen/core/Tensor.h>
#include <functional>
#include <optional>
#include <vector>

#include "pt2diff/compare.h"

namespace pt2diff {

/// measure() of many values where each result is wanted later, not at once: on a GPU each value's
/// reductions are queued on the device as it comes and the dozen numbers of all of them come back in one
/// copy at flush(), so the thread that launches the runs' kernels never waits for the device in between
/// (measure() waits once per value, twice per value in the lockstep runs). The metrics are
/// measure_with_reductions()'s, bit for bit. A value whose reference is on the CPU is measured at once by
/// measure() (its sink called before add() returns).
class MetricsBatch {
 public:
  using Sink = std::function<void(const Metrics&)>;

  /// `queue_cpu`: CPU values are queued too and get measure_with_reductions()'s metrics at flush() (the tests
  /// check the queue's bookkeeping on the CPU with it).
  explicit MetricsBatch(bool queue_cpu = false) : queue_cpu_(queue_cpu) {}

  /// Measures `value` against `reference` as measure() does; `sink` gets the metrics now (CPU) or at flush().
  void add(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype, Sink sink);
  /// Reads back every queued value's numbers in one copy and calls their sinks in the order they were added.
  void flush();
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    Metrics metrics;  ///< what is known before the reductions: numel, exact_kind, unit_roundoff
    std::vector<int64_t> sizes;
    int64_t elements = 0;  ///< of the compared form (complex values as real pairs)
    at::Tensor parts;      ///< the reductions, on the device
    Sink sink;
  };
  std::vector<Pending> pending_;
  bool queue_cpu_ = false;
};

}  // namespace pt2diff
