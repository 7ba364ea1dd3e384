// engine/compare/metrics.cpp — one pass over the elements computes every metric (on the host); on a
// GPU, the same metrics as ATen reductions there, with one small copy back.
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/exp2.h>
#include <ATen/ops/frexp.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>

#include "engine/compare/metrics_batch.h"
#include "pt2diff/compare.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

struct Format {
  int mantissa_bits;  ///< explicit fraction bits
  int min_exponent;   ///< exponent of the smallest normal
};

Format format_of(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return {10, -14};
    case at::kBFloat16: return {7, -126};
    case at::kFloat: return {23, -126};
    case at::kFloat8_e4m3fn: case at::kFloat8_e4m3fnuz: return {3, -6};
    case at::kFloat8_e5m2: case at::kFloat8_e5m2fnuz: return {2, -14};
    default: return {52, -1022};
  }
}

/// The spacing of `dtype` numbers around `x`: 2^(floor(log2|x|) - mantissa), floored at subnormals.
double ulp(double x, const Format& f) {
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = m * 2^e, m in [0.5, 1)
  int exponent = std::max(e - 1, f.min_exponent);
  return std::ldexp(1.0, exponent - f.mantissa_bits);
}

std::vector<int64_t> unravel(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  return index;
}

/// The metrics of `x` against `r` (float64, same shape, on a GPU) reduced there: elementwise tensors
/// and a dozen scalars, stacked on the device (read_reductions() turns them into Metrics once on the host).
/// The same definitions as the loop below.
at::Tensor queue_reductions(const at::Tensor& x, const at::Tensor& r, const Format& f) {
  const at::Tensor xn = x.isnan(), rn = r.isnan(), xi = x.isinf(), ri = r.isinf();
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor d = at::where(xn.logical_or(rn), at::where(xn.logical_and(rn), 0.0, inf),
                           at::where(x.eq(r), 0.0, (x - r).abs()));
  const at::Tensor finite_d = d.isfinite();
  const at::Tensor worst_at = d.numel() ? d.argmax() : at::zeros({}, d.options().dtype(at::kLong));
  // ulp(r): 2^(max(floor(log2|r|), min_exponent) - mantissa), from frexp's exponent (|r| = m 2^e, m in [0.5, 1)).
  const at::Tensor safe_r = at::where(r.isfinite(), r, 1.0);
  const at::Tensor exponent = std::get<1>(at::frexp(safe_r)).to(at::kDouble).sub(1).clamp_min(f.min_exponent);
  const at::Tensor ulp = at::exp2(exponent - f.mantissa_bits);
  const at::Tensor zero = at::zeros({}, d.options());
  const at::Tensor rel = at::where(r.ne(0).logical_and(r.isfinite()), d / r.abs(), zero);
  const at::Tensor both_finite = x.isfinite().logical_and(r.isfinite());
  const at::Tensor fx = at::where(both_finite, x, zero), fr = at::where(both_finite, r, zero);
  const bool any = d.numel() > 0;
  std::vector<at::Tensor> parts = {
      xn.sum().to(at::kDouble), xi.sum().to(at::kDouble), rn.sum().to(at::kDouble), ri.sum().to(at::kDouble),
      d.gt(0).sum().to(at::kDouble),
      any ? d.max() : zero, any ? rel.max() : zero,
      finite_d.logical_not().any().to(at::kDouble),
      at::where(finite_d, d * d, zero).sum(),
      any ? at::where(finite_d, d / ulp, zero).max() : zero,
      (fx * fr).sum(), (fx * fx).sum(), (fr * fr).sum(),
      worst_at.to(at::kDouble),
      any ? x.reshape(-1).index_select(0, worst_at.reshape(1)).reshape({}) : zero,
      any ? r.reshape(-1).index_select(0, worst_at.reshape(1)).reshape({}) : zero,
      both_finite.sum().to(at::kDouble),
      any ? at::where(r.isfinite(), r.abs(), zero).max() : zero};
  return at::stack(parts);
}

/// queue_reductions()'s numbers `h`, back on the host, as the metrics of a value of shape `sizes` (`n` elements
/// in the compared form).
void read_reductions(const double* h, at::IntArrayRef sizes, int64_t n, Metrics& m) {
  const double inf = std::numeric_limits<double>::infinity();
  m.nan = static_cast<int64_t>(h[0]);
  m.inf = static_cast<int64_t>(h[1]);
  m.ref_nan = static_cast<int64_t>(h[2]);
  m.ref_inf = static_cast<int64_t>(h[3]);
  m.mismatches = static_cast<int64_t>(h[4]);
  const bool any = n > 0;
  if (any) {
    m.worst_index = unravel(static_cast<int64_t>(h[13]), sizes);
    m.worst_value = h[14];
    m.worst_reference = h[15];
  }
  if (m.exact_kind) return;
  const bool non_finite = h[7] != 0;
  m.max_abs = h[5];
  m.max_rel = h[6];
  m.max_ulp = non_finite ? inf : h[9];
  const double count = static_cast<double>(n);  // complex values count as their real and imaginary parts
  m.rmse = n == 0 ? 0 : non_finite ? inf : std::sqrt(h[8] / count);
  const double dot = h[10], xx = h[11], rr = h[12];
  m.cosine = (xx == 0 && rr == 0) ? 1.0 : (xx == 0 || rr == 0) ? 0.0 : dot / std::sqrt(xx * rr);
  m.ref_rms = h[16] > 0 ? std::sqrt(rr / h[16]) : 0;
  m.ref_max_abs = h[17];
}

/// Checks shapes, sets numel and exact_kind, and gives both sides contiguous (complex as real pairs) on
/// the reference's device, in their own dtypes.
std::pair<at::Tensor, at::Tensor> prepare_contiguous(const at::Tensor& value, const at::Tensor& reference, Metrics& m) {
  if (value.sizes() != reference.sizes())
    throw Error(Error::Kind::Internal, fmt::format("comparing a value of shape {} with a reference of shape {}",
                                                   fmt::join(value.sizes(), "x"), fmt::join(reference.sizes(), "x")));
  m.numel = value.numel();
  const at::ScalarType dtype = value.scalar_type();
  m.exact_kind = !at::isFloatingType(dtype) && !at::isComplexType(dtype);
  // Both sides on the reference's device: a compiled value read back to the host meets a GPU reference
  // there, and a GPU value meets a CPU reference on the host.
  at::Tensor x = value.device() == reference.device() ? value : value.to(reference.device()), r = reference;
  if (at::isComplexType(dtype)) {
    x = at::view_as_real(x.resolve_conj());
    r = at::view_as_real(r.resolve_conj());
  }
  return {x.contiguous(), r.contiguous()};
}

/// prepare_contiguous(), both sides float64.
std::pair<at::Tensor, at::Tensor> prepare(const at::Tensor& value, const at::Tensor& reference, Metrics& m) {
  auto [x, r] = prepare_contiguous(value, reference, m);
  return {x.to(at::kDouble), r.to(at::kDouble)};
}

/// Elements converted to float64 at a time on the host: a large value's float64 copy is never whole in memory
/// (a 32000-word head over 1024 tokens would be 250 MiB more at each comparison).
constexpr int64_t kChunk = int64_t{1} << 20;

}  // namespace

namespace {

/// prepare() and the reductions queued: what measure_with_reductions() and MetricsBatch share.
at::Tensor start_reductions(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype,
                            Metrics& m, int64_t& elements) {
  auto [x, r] = prepare(value, reference, m);
  const Format f = format_of(ulp_dtype.value_or(value.scalar_type()));
  if (!m.exact_kind) m.unit_roundoff = std::ldexp(1.0, -(f.mantissa_bits + 1));
  elements = x.numel();
  return queue_reductions(x, r, f);
}

}  // namespace

Metrics measure_with_reductions(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype) {
  Metrics m;
  int64_t elements = 0;
  const at::Tensor host = start_reductions(value, reference, ulp_dtype, m, elements).cpu();
  read_reductions(host.data_ptr<double>(), value.sizes(), elements, m);
  return m;
}

void MetricsBatch::add(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype, Sink sink) {
  if (reference.device().is_cpu() && !queue_cpu_) {
    sink(measure(value, reference, ulp_dtype));
    return;
  }
  Pending p;
  p.sizes = value.sizes().vec();
  p.parts = start_reductions(value, reference, ulp_dtype, p.metrics, p.elements);
  p.sink = std::move(sink);
  pending_.push_back(std::move(p));
}

void MetricsBatch::flush() {
  if (pending_.empty()) return;
  std::vector<at::Tensor> parts;
  parts.reserve(pending_.size());
  for (const Pending& p : pending_) parts.push_back(p.parts);
  const at::Tensor host = at::stack(parts).cpu();  // [values, 18]: the one wait for the device
  std::vector<Pending> done = std::move(pending_);
  pending_.clear();
  const double* h = host.data_ptr<double>();
  for (size_t i = 0; i < done.size(); ++i) {
    read_reductions(h + i * static_cast<size_t>(host.size(1)), done[i].sizes, done[i].elements, done[i].metrics);
    done[i].sink(done[i].metrics);
  }
}

Metrics measure(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype) {
  if (!reference.device().is_cpu()) return measure_with_reductions(value, reference, ulp_dtype);
  Metrics m;
  auto [x_all, r_all] = prepare_contiguous(value, reference, m);
  const Format f = format_of(ulp_dtype.value_or(value.scalar_type()));
  const at::Tensor x_flat = x_all.reshape(-1), r_flat = r_all.reshape(-1);
  const int64_t n = x_flat.numel();
  double sq = 0, dot = 0, xx = 0, rr = 0, worst = -1, worst_value = 0, worst_reference = 0;
  int64_t worst_at = 0, finite = 0;
  // One pass in element order, a chunk converted to float64 at a time: the same sums as over the whole.
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    const at::Tensor x = x_flat.narrow(0, start, len).to(at::kDouble), r = r_flat.narrow(0, start, len).to(at::kDouble);
    const double* xp = x.data_ptr<double>();
    const double* rp = r.data_ptr<double>();
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = start + k;
      const double a = xp[k], b = rp[k];
      if (std::isnan(a)) ++m.nan;
      if (std::isinf(a)) ++m.inf;
      if (std::isnan(b)) ++m.ref_nan;
      if (std::isinf(b)) ++m.ref_inf;
      double d;
      if (std::isnan(a) || std::isnan(b)) {
        d = (std::isnan(a) && std::isnan(b)) ? 0 : std::numeric_limits<double>::infinity();
      } else if (a == b) {
        d = 0;  // also equal infinities
      } else {
        d = std::fabs(a - b);
      }
      if (d > 0) ++m.mismatches;
      if (d > worst) {
        worst = d;
        worst_at = i;
        worst_value = a;
        worst_reference = b;
      }
      if (m.exact_kind) continue;
      m.max_abs = std::max(m.max_abs, d);
      if (b != 0 && std::isfinite(b)) m.max_rel = std::max(m.max_rel, d / std::fabs(b));
      if (std::isfinite(d)) {
        sq += d * d;
        m.max_ulp = std::max(m.max_ulp, d / ulp(b, f));
      } else {
        sq = std::numeric_limits<double>::infinity();
        m.max_ulp = std::numeric_limits<double>::infinity();
      }
      if (std::isfinite(b)) m.ref_max_abs = std::max(m.ref_max_abs, std::fabs(b));
      if (std::isfinite(a) && std::isfinite(b)) {
        dot += a * b;
        xx += a * a;
        rr += b * b;
        ++finite;
      }
    }
  }
  if (n) {
    m.worst_index = unravel(worst_at, value.sizes());
    m.worst_value = worst_value;
    m.worst_reference = worst_reference;
  }
  if (m.exact_kind) return m;
  m.rmse = n ? std::sqrt(sq / static_cast<double>(n)) : 0;
  m.cosine = (xx == 0 && rr == 0) ? 1.0 : (xx == 0 || rr == 0) ? 0.0 : dot / std::sqrt(xx * rr);
  m.ref_rms = finite ? std::sqrt(rr / static_cast<double>(finite)) : 0;
  m.unit_roundoff = std::ldexp(1.0, -(f.mantissa_bits + 1));
  return m;
}

}  // namespace pt2diff
