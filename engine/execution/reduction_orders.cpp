// engine/execution/reduction_orders.cpp — other summation orders, computed by re-running the node's
// kernel on flipped or sliced inputs, so every alternative uses the same library code as eager.
#include "engine/execution/reduction_orders.h"

#include <algorithm>
#include <cmath>

#include <ATen/ops/zeros_like.h>
#include <fmt/format.h>

#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

std::vector<int64_t> int_list_argument(const Node& n, const std::string& name) {
  const NamedArgument* a = n.input(name);
  if (a && a->arg.kind == Argument::Kind::Ints) return a->arg.as<std::vector<int64_t>>();
  if (a && a->arg.kind == Argument::Kind::Int) return {a->arg.as<int64_t>()};
  return {};
}

int64_t int_argument(const Node& n, const std::string& name, int64_t fallback) {
  const NamedArgument* a = n.input(name);
  return a && a->arg.kind == Argument::Kind::Int ? a->arg.as<int64_t>() : fallback;
}

at::Tensor tensor_at(const std::vector<c10::IValue>& inputs, size_t i, const Node& n) {
  if (i >= inputs.size() || !inputs[i].isTensor())
    throw Error(Error::Kind::Usage, fmt::format("node '{}' has no tensor input #{} to reorder (an input used twice?)", n.name, i));
  return inputs[i].toTensor();
}

/// The reduced dims of a sum/mean, non-negative; every dim when none is given.
std::vector<int64_t> reduced_dims(const Node& n, const at::Tensor& x) {
  std::vector<int64_t> dims = int_list_argument(n, "dim");
  if (dims.empty())
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  for (int64_t& d : dims)
    if (d < 0) d += x.dim();
  return dims;
}

/// For matmul-like ops: which inputs hold the reduction and along which dim (negative: from the end).
struct MatmulLayout {
  size_t a, b;
  int64_t a_dim, b_dim;
  std::optional<size_t> bias;
};

std::optional<MatmulLayout> matmul_layout(const std::string& op, const std::vector<c10::IValue>& in) {
  if (op == "mm") return MatmulLayout{0, 1, 1, 0, {}};
  if (op == "bmm") return MatmulLayout{0, 1, 2, 1, {}};
  if (op == "addmm") return MatmulLayout{1, 2, 1, 0, size_t{0}};
  if (op == "baddbmm") return MatmulLayout{1, 2, 2, 1, size_t{0}};
  if (op == "linear") return MatmulLayout{0, 1, -1, 1, in.size() > 2 ? std::optional<size_t>(2) : std::nullopt};
  return std::nullopt;
}

bool is_convolution(const std::string& op) { return op == "convolution" || op == "conv1d" || op == "conv2d" || op == "conv3d"; }

bool is_softmax(const std::string& op) { return op == "_softmax" || op == "softmax" || op == "_log_softmax" || op == "log_softmax"; }

/// Partial results added in order or in a balanced tree, in their own dtype.
at::Tensor combine_partials(std::vector<at::Tensor> parts, Combine combine) {
  if (combine == Combine::Sequential) {
    at::Tensor total = parts.front();
    for (size_t i = 1; i < parts.size(); ++i) total = total.add(parts[i]);
    return total;
  }
  while (parts.size() > 1) {
    std::vector<at::Tensor> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(parts[i].add(parts[i + 1]));
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.front();
}

}  // namespace

const std::vector<std::string>& reorderable_ops() {
  static const std::vector<std::string> ops = {"mm", "bmm", "addmm", "baddbmm", "linear", "matmul", "convolution",
                                               "conv1d", "conv2d", "conv3d", "sum", "mean", "_softmax", "softmax",
                                               "_log_softmax", "log_softmax"};
  return ops;
}

std::string reduction_op_name(const Node& n) {
  std::string op = short_target(n.target);
  if (op.rfind("aten.", 0) == 0) op = op.substr(5);
  if (auto dot = op.find('.'); dot != std::string::npos) op = op.substr(0, dot);
  return op;
}

int64_t reduction_length(const Node& n, const std::vector<c10::IValue>& in) {
  const std::string op = reduction_op_name(n);
  if (auto l = matmul_layout(op, in)) return tensor_at(in, l->a, n).size(l->a_dim);
  if (op == "matmul") return tensor_at(in, 0, n).size(-1);
  if (is_convolution(op)) {
    const at::Tensor w = tensor_at(in, 1, n);
    int64_t k = 1;
    for (int64_t d = 1; d < w.dim(); ++d) k *= w.size(d);
    return k;
  }
  if (op == "sum" || op == "mean") {
    const at::Tensor x = tensor_at(in, 0, n);
    int64_t k = 1;
    for (int64_t d : reduced_dims(n, x)) k *= x.size(d);
    return k;
  }
  if (is_softmax(op)) return tensor_at(in, 0, n).size(int_argument(n, "dim", -1));
  return 0;
}

std::optional<double> serial_sum_error(const Node& n, const at::Tensor& x, double u) {
  const std::string op = reduction_op_name(n);
  if ((op != "sum" && op != "mean") || !x.defined() || !x.is_floating_point()) return std::nullopt;
  const std::vector<int64_t> reduced = reduced_dims(n, x);
  std::vector<int64_t> order;  // kept dims first, the reduced ones last: rows of [outputs, N]
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) order.push_back(d);
  int64_t length = 1;
  for (int64_t d : reduced) {
    if (d < 0 || d >= std::max<int64_t>(x.dim(), 1)) return std::nullopt;
    if (x.dim() > 0) order.push_back(d), length *= x.size(d);
  }
  if (x.numel() == 0 || length <= 1) return 0.0;
  const at::Tensor rows = x.to(at::kDouble).permute(order).reshape({-1, length});
  const at::Tensor partial = rows.cumsum(1).narrow(1, 1, length - 1);  // the sums each addition rounds
  double error = u / std::sqrt(3.0) * partial.square().sum(1).mean().sqrt().item<double>();
  if (op == "mean") error /= static_cast<double>(length);
  return error;
}

std::vector<c10::IValue> reversed_order(const Node& n, NodeCall& call) {
  const std::string op = reduction_op_name(n);
  std::vector<c10::IValue> in = call.inputs;
  auto flip = [&](size_t i, int64_t dim) { in[i] = tensor_at(in, i, n).flip({dim}); };
  if (auto l = matmul_layout(op, in)) {
    flip(l->a, l->a_dim);
    flip(l->b, l->b_dim);
    return call.rerun(in);
  }
  if (op == "matmul") {
    const at::Tensor b = tensor_at(in, 1, n);
    flip(0, -1);
    flip(1, b.dim() == 1 ? 0 : -2);
    return call.rerun(in);
  }
  if (is_convolution(op)) {
    if (int_argument(n, "groups", 1) != 1) throw Error(Error::Kind::Usage, fmt::format("'{}' is a grouped convolution: not reordered", n.name));
    flip(0, 1);
    flip(1, 1);
    return call.rerun(in);
  }
  if (op == "sum" || op == "mean") {
    const at::Tensor x = tensor_at(in, 0, n);
    in[0] = x.flip(reduced_dims(n, x));
    return call.rerun(in);
  }
  // softmax family: flip along the softmax dim, then flip the result back into place.
  const int64_t dim = int_argument(n, "dim", -1);
  flip(0, dim);
  std::vector<c10::IValue> out = call.rerun(in);
  for (c10::IValue& v : out)
    if (v.isTensor()) v = v.toTensor().flip({dim});
  return out;
}

std::optional<std::vector<c10::IValue>> blocked_order(const Node& n, NodeCall& call, int64_t block, Combine combine) {
  const std::string op = reduction_op_name(n);
  const std::vector<c10::IValue>& in = call.inputs;
  const int64_t length = reduction_length(n, in);
  if (block <= 0 || length <= block) return std::nullopt;
  std::vector<at::Tensor> parts;  // partial results in the output dtype
  if (auto l = matmul_layout(op, in)) {
    const at::Tensor a = tensor_at(in, l->a, n), b = tensor_at(in, l->b, n);
    const int64_t a_dim = l->a_dim < 0 ? l->a_dim + a.dim() : l->a_dim;
    for (int64_t s = 0; s < length; s += block) {
      const int64_t len = std::min(block, length - s);
      std::vector<c10::IValue> part = in;
      part[l->a] = a.narrow(a_dim, s, len);
      part[l->b] = b.narrow(l->b_dim, s, len);
      if (l->bias && s > 0) part[*l->bias] = at::zeros_like(tensor_at(in, *l->bias, n));  // the bias is added once
      parts.push_back(call.rerun(part).at(0).toTensor());
    }
    return std::vector<c10::IValue>{combine_partials(std::move(parts), combine)};
  }
  if (op == "sum" || op == "mean") {
    const at::Tensor x = tensor_at(in, 0, n);
    const int64_t dim = reduced_dims(n, x).front(), size = x.size(dim);
    if (size <= block) return std::nullopt;
    for (int64_t s = 0; s < size; s += block) {
      const int64_t len = std::min(block, size - s);
      std::vector<c10::IValue> part = in;
      part[0] = x.narrow(dim, s, len);
      at::Tensor partial = call.rerun(part).at(0).toTensor();
      if (op == "mean") partial = partial.mul(static_cast<double>(len) / static_cast<double>(size));
      parts.push_back(partial);
    }
    return std::vector<c10::IValue>{combine_partials(std::move(parts), combine)};
  }
  if (is_convolution(op)) {
    // Blocks of input channels (each channel brings kh*kw terms); the bias is added once.
    const at::Tensor x = tensor_at(in, 0, n), w = tensor_at(in, 1, n);
    if (int_argument(n, "groups", 1) != 1 || (op == "convolution" && in.size() > 6 && in[6].isBool() && in[6].toBool()))
      return std::nullopt;
    const int64_t channels = x.size(1), per_channel = std::max<int64_t>(1, length / std::max<int64_t>(channels, 1));
    const int64_t step = std::max<int64_t>(1, block / per_channel);
    if (channels <= step) return std::nullopt;
    for (int64_t s = 0; s < channels; s += step) {
      const int64_t len = std::min(step, channels - s);
      std::vector<c10::IValue> part = in;
      part[0] = x.narrow(1, s, len);
      part[1] = w.narrow(1, s, len);
      if (s > 0 && in.size() > 2 && in[2].isTensor()) part[2] = at::zeros_like(in[2].toTensor());  // the bias is added once
      parts.push_back(call.rerun(part).at(0).toTensor());
    }
    return std::vector<c10::IValue>{combine_partials(std::move(parts), combine)};
  }
  if (is_softmax(op)) {
    // The same math as the kernel (max subtracted, exp, normalized) in its accumulation dtype, with
    // the normalizing sum taken in blocks.
    const at::Tensor x = tensor_at(in, 0, n);
    const int64_t dim = int_argument(n, "dim", -1) < 0 ? int_argument(n, "dim", -1) + x.dim() : int_argument(n, "dim", -1);
    const at::ScalarType acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    const at::Tensor wide = x.to(acc);
    const at::Tensor shifted = wide.sub(std::get<0>(wide.max(dim, /*keepdim=*/true)));
    const at::Tensor e = shifted.exp();
    for (int64_t s = 0; s < length; s += block) parts.push_back(e.narrow(dim, s, std::min(block, length - s)).sum(dim, true));
    const at::Tensor total = combine_partials(std::move(parts), combine);
    const bool log = op == "_log_softmax" || op == "log_softmax";
    const at::Tensor out = log ? shifted.sub(total.log()) : e.div(total);
    const at::ScalarType out_dtype = call.outputs.empty() || !call.outputs[0].isTensor() ? x.scalar_type() : call.outputs[0].toTensor().scalar_type();
    return std::vector<c10::IValue>{out.to(out_dtype)};
  }
  return std::nullopt;
}

}  // namespace pt2diff
