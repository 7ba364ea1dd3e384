// graphs/strided_layout.h — whether sizes, strides and a storage offset read from a file describe a
// tensor libtorch can hold over a storage of a given size, checked before libtorch sees them (it
// overflows, asserts or reads out of bounds on hostile values). No torch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pt2diff {

/// What a strided tensor over a storage needs.
struct StridedLayout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  int64_t element_size = 1;  ///< bytes per element
};

/// The bytes of storage the layout reaches: (offset + sum((size - 1) * stride) + 1) * element size, 0
/// for an empty tensor; or, when the layout is impossible or needs more than 2^62 bytes, why (one
/// phrase: "3 sizes but 2 strides", "a negative stride (-4) in dimension 1", ...).
struct LayoutCheck {
  int64_t needed_bytes = 0;
  int64_t numel = 0;
  std::optional<std::string> problem;
};
LayoutCheck check_layout(const StridedLayout& layout);

/// The largest size, stride, offset or byte count pt2diff accepts from a file: 2^62 - 1 (libtorch's
/// SymInt cannot hold every int64, and no real tensor comes near).
inline constexpr int64_t kMaxLayoutValue = (int64_t{1} << 62) - 1;

}  // namespace pt2diff
