// engine/execution/device_memory.cpp — at::accelerator, behind engine/load/torch_compat.h's feature macro.
#include "engine/execution/device_memory.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/ops/empty.h>
#include <fmt/format.h>
#include <fstream>
#include <string>

#include "engine/load/torch_compat.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

c10::DeviceIndex index_of(const Device& d) { return static_cast<c10::DeviceIndex>(d.index < 0 ? 0 : d.index); }

/// torch initializes CUDA (and its caching allocator, which the stats read) on first use: one tiny
/// allocation does it, where the counters would otherwise throw "Invalid device argument".
[[maybe_unused]] bool initialized(const Device& d) {
  if (d.type != "cuda" || !cuda_present()) return false;
  (void)at::empty({1}, at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, index_of(d))));
  return true;
}

}  // namespace

bool cuda_present() { return at::globalContext().hasCUDA(); }

void require_device(const Device& device) {
  if (device.type == "cpu") return;
  if (device.type != "cuda")
    throw Error(Error::Kind::Usage, fmt::format("--device {}: pt2diff runs graphs on cpu or cuda[:N]", device.str()));
  if (!cuda_present())
    throw Error(Error::Kind::Usage,
                fmt::format("--device {}: this pt2diff's libtorch ({}) sees no CUDA device: run it on the GPU machine, built "
                            "against a CUDA torch (scripts/setup.sh --python /path/to/python), or pass --device cpu",
                            device.str(), PT2DIFF_LINKED_TORCH_VERSION));
  const auto count = at::globalContext().getAcceleratorHooksInterface(c10::DeviceType::CUDA).deviceCount();
  if (index_of(device) >= count)
    throw Error(Error::Kind::Usage, fmt::format("--device {}: this machine has {} CUDA device{} (cuda:0 to cuda:{})", device.str(),
                                                count, count == 1 ? "" : "s", count - 1));
}

std::optional<std::pair<int64_t, int64_t>> gpu_memory_info(const Device& device) {
#if PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY
  if (!initialized(device)) return std::nullopt;
  const auto [free, total] = at::accelerator::getMemoryInfo(index_of(device));
  return std::pair<int64_t, int64_t>(static_cast<int64_t>(free), static_cast<int64_t>(total));
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_gpu_peak(const Device& device) {
#if PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY
  if (initialized(device)) at::accelerator::resetPeakStats(index_of(device));
#else
  (void)device;
#endif
}

int64_t gpu_peak_bytes(const Device& device) {
#if PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY
  if (!initialized(device)) return -1;
  const auto stats = at::accelerator::getDeviceStats(index_of(device));
  return stats.allocated_bytes[0].peak;  // StatType::AGGREGATE
#else
  (void)device;
  return -1;
#endif
}

int64_t host_resident_bytes(bool peak) {
  std::ifstream status("/proc/self/status");
  const std::string key = peak ? "VmHWM:" : "VmRSS:";
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size())) * 1024;  // "VmHWM:   123456 kB"
  return -1;
}

}  // namespace pt2diff
