// engine/compare/metrics.cpp — one pass over the elements computes every metric.
#include <ATen/ops/view_as_real.h>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>

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

}  // namespace

Metrics measure(const at::Tensor& value, const at::Tensor& reference, std::optional<at::ScalarType> ulp_dtype) {
  if (value.sizes() != reference.sizes())
    throw Error(Error::Kind::Internal, fmt::format("comparing a value of shape {} with a reference of shape {}",
                                                   fmt::join(value.sizes(), "x"), fmt::join(reference.sizes(), "x")));
  Metrics m;
  m.numel = value.numel();
  const at::ScalarType dtype = value.scalar_type();
  m.exact_kind = !at::isFloatingType(dtype) && !at::isComplexType(dtype);
  at::Tensor x = value, r = reference;
  if (at::isComplexType(dtype)) {
    x = at::view_as_real(x.resolve_conj());
    r = at::view_as_real(r.resolve_conj());
  }
  x = x.to(at::kDouble).contiguous();
  r = r.to(at::kDouble).contiguous();
  const double* xp = x.data_ptr<double>();
  const double* rp = r.data_ptr<double>();
  const int64_t n = x.numel();
  const Format f = format_of(ulp_dtype.value_or(dtype));
  double sq = 0, dot = 0, xx = 0, rr = 0, worst = -1;
  int64_t worst_at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = xp[i], b = rp[i];
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
    if (std::isfinite(a) && std::isfinite(b)) {
      dot += a * b;
      xx += a * a;
      rr += b * b;
    }
  }
  if (n) {
    m.worst_index = unravel(worst_at, value.sizes());
    m.worst_value = xp[worst_at];
    m.worst_reference = rp[worst_at];
  }
  if (m.exact_kind) return m;
  m.rmse = n ? std::sqrt(sq / static_cast<double>(n)) : 0;
  m.cosine = (xx == 0 && rr == 0) ? 1.0 : (xx == 0 || rr == 0) ? 0.0 : dot / std::sqrt(xx * rr);
  return m;
}

}  // namespace pt2diff
