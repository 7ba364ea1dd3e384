// engine/execution/promotion.cpp — see promotion.h. The one TU with ATen's TypeProperties.
#include "engine/execution/promotion.h"

#include <ATen/native/TypeProperties.h>

namespace pt2diff {

namespace {

int mantissa_bits(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return 8;
    case at::kHalf: return 11;
    case at::kFloat: return 24;
    case at::kDouble: return 53;
    default: return 1000;  // float8 and non-floating types are never the "lower" one here
  }
}

}  // namespace

std::optional<Promotion> promotion_of(const std::vector<c10::IValue>& inputs) {
  Promotion p;
  at::native::ResultTypeState state{};
  std::vector<at::ScalarType> floating;
  for (const c10::IValue& v : inputs) {
    if (v.isTensor() && v.toTensor().defined()) {
      const at::Tensor& t = v.toTensor();
      p.tensor_inputs.push_back(t.scalar_type());
      state = at::native::update_result_type_state(t, state);
      if (t.is_floating_point()) floating.push_back(t.scalar_type());
    } else if (v.isDouble()) {
      p.has_scalar = true;
      state = at::native::update_result_type_state(c10::Scalar(v.toDouble()), state);
    }
  }
  if (floating.empty()) return std::nullopt;
  p.result_type = at::native::result_type(state);
  for (at::ScalarType t : floating) p.mixed = p.mixed || t != floating.front();
  return p;
}

std::optional<std::vector<c10::IValue>> demoted_promotion(NodeCall& call) {
  auto p = promotion_of(call.inputs);
  if (!p || !p->mixed) return std::nullopt;
  at::ScalarType lowest = at::kDouble;
  for (at::ScalarType t : p->tensor_inputs)
    if (mantissa_bits(t) < mantissa_bits(lowest)) lowest = t;
  std::vector<c10::IValue> in = call.inputs;
  for (c10::IValue& v : in)
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_floating_point()) v = v.toTensor().to(lowest);
  std::vector<c10::IValue> out = call.rerun(in);
  for (size_t i = 0; i < out.size() && i < call.outputs.size(); ++i)
    if (out[i].isTensor() && call.outputs[i].isTensor()) out[i] = out[i].toTensor().to(call.outputs[i].toTensor().scalar_type());
  return out;
}

}  // namespace pt2diff
