// graphs/memory_estimate.h — how much memory a diff's runs hold, from the IR's shapes, before any of it
// is allocated: a run that would not fit is refused with the estimate instead of dying in the
// allocator (a [2^20, 2^20] input drawn at random, a node producing 6 GB). No torch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

struct MemoryEstimate {
  /// An upper bound of what the runs hold at once: every tensor value of the graph (graph inputs and
  /// weights included) in its own dtype for the eager and the local run, in float64 for the reference
  /// (integers keep their dtype), and once more in its dtype when the exploded compile returns it.
  double bytes = 0;
  double native_bytes = 0;     ///< of `bytes`, the values in their own dtypes (eager, local, exploded)
  double reference_bytes = 0;  ///< of `bytes`, the fp64 run's values
  std::string largest;        ///< the value that needs the most: "repeat_1 float32[40000, 40000]"
  double largest_bytes = 0;   ///< what it needs, all copies
  size_t unsized = 0;         ///< tensor values whose size is unknown (not counted)
};

/// A dynamic dimension takes the size `symbols` binds its symbol to (BoundInputs::symbols: the real
/// inputs'), else its export-time hint. Sizes are summed in doubles: a hostile 2^62-element shape gives
/// a huge estimate, never an overflow.
MemoryEstimate estimate_memory(const Graph& graph, bool exploded, const std::map<std::string, int64_t>& symbols = {});

/// "1.5 GiB", "640 MiB", "12 KiB", "800 B".
std::string format_bytes(double bytes);

/// "16G", "512M", "1.5T", "800K", "1000000" (bytes; K/M/G/T are powers of 1024) → bytes; "none" → -1.
/// nullopt when it is none of these.
std::optional<int64_t> parse_byte_size(const std::string& text);

/// Throws pt2diff::Error(Usage) with the estimate when the runs would hold more than `max_memory` bytes
/// (0: the memory available now; negative: no limit).
void check_memory(const Graph& graph, bool exploded, int64_t max_memory, const std::map<std::string, int64_t>& symbols = {});

/// The memory the system could give this process now (MemAvailable in /proc/meminfo); nullopt when unknown.
std::optional<int64_t> available_memory();

/// The per-process memory limit `max_memory` (--max-memory, DiffOptions::max_memory) stands for
/// (BackendOptions::memory_limit): the bytes it names; for 0, the memory available now; at least 1 GiB;
/// negative, or unknown, 0 (no limit).
int64_t memory_limit_for(int64_t max_memory);

}  // namespace pt2diff
