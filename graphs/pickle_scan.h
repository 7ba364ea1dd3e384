// graphs/pickle_scan.h — how deeply a pickle nests its containers, read from its opcodes before
// libtorch's unpickler builds anything: a list nested 200,000 deep overflowed the stack in libtorch's
// recursive destructor (issue 20). No torch, no objects built, nothing called.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pt2diff {

/// Nesting deeper than this is refused (torch.save of real inputs nests a handful of levels).
inline constexpr size_t kMaxPickleDepth = 1000;

struct PickleShape {
  size_t depth = 0;  ///< the longest chain of containers (list, tuple, dict, set, reduce, object) inside one another
  std::optional<std::string> problem;  ///< why the opcodes cannot be a pickle torch.save wrote, or nest too deep
};

/// Walks the opcodes of `pickle` (protocols 0 to 5) and measures its nesting, following memo references
/// (a container built top-down through the memo is measured like one built bottom-up). `problem` is set
/// for a truncated or unknown opcode, a stack underflow, a container that contains itself, or a depth
/// beyond `max_depth`.
PickleShape scan_pickle(std::string_view pickle, size_t max_depth = kMaxPickleDepth);

}  // namespace pt2diff
