// engine/diff/node_ratio.cpp — the compiled local error against eager's, with the summation floor.
#include "engine/diff/node_ratio.h"

#include <algorithm>
#include <cmath>

#include "engine/execution/reduction_orders.h"

namespace pt2diff {

double compiled_local_ratio(const RunState& s, const Node& n, const ValueError& ve) {
  Metrics eager = ve.local;
  const bool wide = ve.dtype == "float32" || ve.dtype == "float64";
  const auto inputs = n.input_values();
  const std::string op = wide ? reduction_op_name(n) : "";
  if ((op == "sum" || op == "mean") && !inputs.empty() && static_cast<size_t>(inputs.front()) < s.reference.fp64.size()) {
    const c10::IValue terms = s.reference.rounded(inputs.front());
    const double u = ve.dtype == "float64" ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
    if (terms.isTensor())
      if (auto serial = serial_sum_error(n, terms.toTensor(), u)) eager.rmse = std::max(eager.rmse, *serial);
  }
  return error_ratio(ve.compiled_local, eager);
}

}  // namespace pt2diff
