// graphs/strided_layout.cpp — layout arithmetic in 128 bits, so no hostile size overflows it.
#include "graphs/strided_layout.h"

#include <fmt/format.h>

namespace pt2diff {

LayoutCheck check_layout(const StridedLayout& l) {
  LayoutCheck c;
  auto fail = [&](std::string why) {
    c.problem = std::move(why);
    return c;
  };
  if (l.sizes.size() != l.strides.size()) return fail(fmt::format("{} sizes but {} strides", l.sizes.size(), l.strides.size()));
  if (l.element_size <= 0) return fail(fmt::format("an element size of {} bytes", l.element_size));
  if (l.storage_offset < 0) return fail(fmt::format("a negative storage offset ({})", l.storage_offset));
  if (l.storage_offset > kMaxLayoutValue) return fail(fmt::format("a storage offset of {} (beyond 2^62)", l.storage_offset));
  __int128 numel = 1, reach = static_cast<__int128>(l.storage_offset) + 1;
  bool empty = false;
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    const int64_t size = l.sizes[d], stride = l.strides[d];
    if (size < 0) return fail(fmt::format("a negative size ({}) in dimension {}", size, d));
    if (stride < 0) return fail(fmt::format("a negative stride ({}) in dimension {}: pt2diff reads non-negative strides only", stride, d));
    if (size > kMaxLayoutValue || stride > kMaxLayoutValue)
      return fail(fmt::format("a size or stride beyond 2^62 in dimension {} ({}, {})", d, size, stride));
    if (size == 0) empty = true;
    numel *= size;
    if (numel > kMaxLayoutValue) return fail("more than 2^62 elements");
    if (size > 0) reach += static_cast<__int128>(size - 1) * stride;
    if (reach > kMaxLayoutValue) return fail("a reach beyond 2^62 elements into its storage");
  }
  if (empty) return c;  // no element: nothing is read, whatever the strides
  const __int128 bytes = reach * l.element_size;
  if (bytes > kMaxLayoutValue) return fail("more than 2^62 bytes of storage");
  c.numel = static_cast<int64_t>(numel);
  c.needed_bytes = static_cast<int64_t>(bytes);
  return c;
}

}  // namespace pt2diff
