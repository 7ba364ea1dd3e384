// graphs/memory_estimate.cpp — sizes from TensorMeta (hints for dynamic dims), summed in doubles.
#include "graphs/memory_estimate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <cstdio>
#include <fstream>

#include "pt2diff/error.h"

namespace pt2diff {

namespace {

std::optional<double> meta_numel(const TensorMeta& m, const std::map<std::string, int64_t>& symbols) {
  double n = 1;
  for (const SymInt& s : m.sizes) {
    auto bound = s.is_static() ? symbols.end() : symbols.find(s.expr);
    const auto v = bound != symbols.end() ? std::optional<int64_t>(bound->second) : s.concrete();
    if (!v || *v < 0) return std::nullopt;
    n *= static_cast<double>(*v);
  }
  return n;
}

}  // namespace

MemoryEstimate estimate_memory(const Graph& graph, bool exploded, const std::map<std::string, int64_t>& symbols) {
  MemoryEstimate e;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::Tensor) continue;
    const std::optional<double> n = v.meta ? meta_numel(*v.meta, symbols) : std::nullopt;
    if (!n || !v.meta) {
      ++e.unsized;
      continue;
    }
    const DType d = v.meta->dtype;
    const double own = *n * static_cast<double>(element_size(d));
    const double reference = is_complex(d) ? *n * 16 : is_floating(d) ? *n * 8 : own;
    const double all = own * (exploded ? 3 : 2) + reference;
    e.bytes += all;
    e.native_bytes += own * (exploded ? 3 : 2);
    e.reference_bytes += reference;
    if (all > e.largest_bytes) {
      e.largest_bytes = all;
      e.largest = fmt::format("{} {}{}", v.name, dtype_name(d), v.meta->shape_str());
    }
  }
  return e;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(units)) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : bytes >= 1e6 ? fmt::format("{:.3g} {}", bytes, units[u]) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::optional<int64_t> parse_byte_size(const std::string& text) {
  if (text == "none") return -1;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();  // "16GB", "16GiB"
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
  double scale = 1;
  if (unit.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
      case 'K': scale = 1024.0; break;
      case 'M': scale = 1024.0 * 1024; break;
      case 'G': scale = 1024.0 * 1024 * 1024; break;
      case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
      default: return std::nullopt;
    }
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes <= 0 || bytes > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::optional<int64_t> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      long long kib = 0;
      if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1) return static_cast<int64_t>(kib) * 1024;
    }
  return std::nullopt;
}

int64_t memory_limit_for(int64_t max_memory) {
  // At least 1 GiB: Python and torch need about half of it to start, libtorch allocates at exit too, and a
  // smaller --max-memory is the estimate's to refuse (exit 2) before anything large is allocated.
  constexpr int64_t kFloor = int64_t{1} << 30;
  if (max_memory > 0) return std::max(max_memory, kFloor);
  if (max_memory < 0) return 0;
  const int64_t available = available_memory().value_or(0);
  return available > 0 ? std::max(available, kFloor) : 0;
}

void check_memory(const Graph& graph, bool exploded, int64_t max_memory, const std::map<std::string, int64_t>& symbols) {
  std::optional<int64_t> limit = max_memory > 0 ? std::optional<int64_t>(max_memory) : max_memory < 0 ? std::nullopt : available_memory();
  if (!limit) return;
  const MemoryEstimate e = estimate_memory(graph, exploded, symbols);
  if (e.bytes <= static_cast<double>(*limit)) return;
  throw Error(Error::Kind::Usage,
              fmt::format("the runs would hold about {} (the largest value: {}, {} with its fp64 and local copies), more than "
                          "--max-memory {}{}: allow more with --max-memory SIZE (or none), or use smaller inputs",
                          format_bytes(e.bytes), e.largest, format_bytes(e.largest_bytes), format_bytes(static_cast<double>(*limit)),
                          max_memory == 0 ? " (the memory available now)" : ""));
}

}  // namespace pt2diff
