// engine/execution/autocast_guard.h — torch.autocast's __enter__/__exit__ for one device type, as RAII:
// used by the wrap_with_autocast kernel (higher_order_kernels.cpp) and by the kernels of nodes inlined out
// of an autocast region (kernel_factory.cpp, graphs/inline_region.h).
#pragma once

#include <ATen/autocast_mode.h>

namespace pt2diff {

/// Sets autocast for one device type on construction and restores it on destruction, as
/// torch.autocast's __enter__/__exit__ do (the weight-cast cache is cleared when the outermost region ends).
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype, bool cache)
      : device_(device), enabled_(at::autocast::is_autocast_enabled(device)), dtype_(at::autocast::get_autocast_dtype(device)),
        cache_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_enabled(device, enabled);
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_cache_enabled(cache);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, enabled_);
    at::autocast::set_autocast_dtype(device_, dtype_);
    at::autocast::set_autocast_cache_enabled(cache_);
  }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool enabled_;
  c10::ScalarType dtype_;
  bool cache_;
};

}  // namespace pt2diff
