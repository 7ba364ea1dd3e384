// graphs/search/kernel_search.cpp — the op inside a failing fused kernel. The oracle's positions are
// the kernel's nodes the failing one depends on, in graph order, the failing node last. A region of the
// first e of them, fed with fp64 values rounded to their dtypes and compiled as one region (so the
// compiler may fuse them as it did), is judged at its last node; the smallest failing e is bisected.
// That node is the op; whether it fails alone comes from the exploded compile (no compile here), or
// from one more window when that compile did not run.
#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "graphs/search/oracle.h"
#include "graphs/wording/wording.h"

namespace pt2diff {

size_t kernel_search_bound(size_t nodes) {
  return 1 + static_cast<size_t>(std::ceil(std::log2(static_cast<double>(std::max<size_t>(nodes, 1)))));
}

namespace {

/// Bisection over prefixes of a kernel's `n` nodes whose whole region fails (`whole`): the fewest first nodes whose
/// region fails, and the answer that showed it. Invariant: the first `hi` nodes fail, the first `lo` pass (0: none).
std::pair<size_t, ProbeAnswer> shortest_failing_prefix(size_t n, const ProbeAnswer& whole,
                                                       const std::function<ProbeAnswer(size_t)>& prefix_fails) {
  size_t lo = 0, hi = n;
  ProbeAnswer decisive = whole;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    ProbeAnswer a = prefix_fails(mid);
    if (a.fails) {
      hi = mid;
      decisive = a;
    } else {
      lo = mid;
    }
  }
  return {hi, decisive};
}

}  // namespace

KernelCulprit search_kernel(RegionOracle& oracle, const std::string& kernel, const std::function<std::optional<bool>(size_t)>& alone_fails,
                            const std::function<void(const std::string&)>& on_step) {
  const auto start = std::chrono::steady_clock::now();
  KernelCulprit k;
  k.kernel = kernel;
  const size_t n = oracle.size();
  Culprit all;
  oracle.name_nodes(0, n, all);
  k.nodes = all.nodes;
  k.bound = kernel_search_bound(n);
  size_t asked = 0;
  auto fails = [&](size_t begin, size_t end) {
    if (on_step) on_step(fmt::format("inside {}, probe {} of ~{}", kernel, ++asked, k.bound));
    return oracle.window(begin, end);
  };
  auto done = [&] {
    k.compiles = oracle.compiles();
    k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return k;
  };
  try {
    if (n == 0) {
      k.kind = "inconclusive";
      k.summary = wording::kernel_culprit_summary(k, "");
      return done();
    }
    const ProbeAnswer whole = fails(0, n);
    if (!whole.fails) {
      k.kind = "inconclusive";
      k.summary = wording::kernel_culprit_summary(k, whole.verdict.detail);
      return done();
    }
    auto [hi, decisive] = shortest_failing_prefix(n, whole, [&](size_t end) { return fails(0, end); });
    const size_t op = hi - 1;
    Culprit named;
    oracle.name_nodes(op, op + 1, named);
    k.op = named.nodes.front();
    k.target = named.ops.front();
    k.source = named.sources.front();
    k.module_path = named.module_paths.front();
    std::optional<bool> alone = op == 0 ? std::optional<bool>(true) : alone_fails(op);
    if (!alone) {  // no exploded compile: ask the op alone (one compile past the bound)
      alone = fails(op, op + 1).fails;
      ++k.bound;
    }
    if (*alone) {
      k.kind = "single_op";
      k.summary = wording::kernel_culprit_summary(k, decisive.verdict.detail);
    } else {
      Culprit region;
      oracle.name_nodes(0, hi, region);
      for (const std::string& node : region.nodes)
        if (node != k.op) k.fused_with.push_back(node);
      k.kind = "fused";
      k.summary = wording::kernel_culprit_summary(k, decisive.verdict.detail);
    }
  } catch (const OracleLost& e) {
    k = KernelCulprit{};
    k.kind = "inconclusive";
    k.kernel = kernel;
    k.nodes = all.nodes;
    k.bound = kernel_search_bound(n);
    k.summary = wording::kernel_culprit_summary(k, "", e.what());
  }
  return done();
}

}  // namespace pt2diff
