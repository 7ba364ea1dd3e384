// engine/execution/device_memory.h — what a GPU has: whether this libtorch sees it, its free memory, and
// the peak the caching allocator held (torch's device-generic accelerator API: no CUDA headers, so the
// same code builds against CPU and CUDA wheels).
#pragma once

#include <cstdint>
#include <optional>

#include "pt2diff/graph.h"

namespace pt2diff {

/// Throws pt2diff::Error(Usage) with one line (the device, this torch, the remedy) unless `device` is
/// the CPU or a GPU this libtorch can use.
void require_device(const Device& device);

/// Whether the linked libtorch sees at least one CUDA device (false on a CPU build).
bool cuda_present();

/// Free and total bytes on `device` (a GPU); nullopt when unknown (a torch without the API).
std::optional<std::pair<int64_t, int64_t>> gpu_memory_info(const Device& device);

/// Starts counting the caching allocator's peak on `device` from now; no-op on the CPU.
void reset_gpu_peak(const Device& device);
/// The most bytes the caching allocator held allocated on `device` since reset_gpu_peak(); -1 when
/// unknown or on the CPU.
int64_t gpu_peak_bytes(const Device& device);

/// This process's resident memory now (VmRSS), or the most it has had since it started (VmHWM), in bytes, from
/// /proc/self/status; -1 where that file is not there (not Linux).
int64_t host_resident_bytes(bool peak);

}  // namespace pt2diff
