// engine/execution/reduction_orders.cpp — other summation orders, computed by re-running the node's
// kernel on flipped or sliced inputs, so every alternative uses the same library code as eager.
#include "engine/execution/reduction_orders.h"

#include <ATen/ops/zeros_like.h>
#include <fmt/format.h>

#include "graphs/graph_text.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

std::vector<int64_t> int_list_argument(const Node& n, const std::string& name) {
  for (const NamedArgument& a : n.inputs) {
    if (a.name != name) continue;
    if (a.arg.kind == Argument::Kind::Ints) return a.arg.as<std::vector<int64_t>>();
    if (a.arg.kind == Argument::Kind::Int) return {a.arg.as<int64_t>()};
  }
  return {};
}

int64_t int_argument(const Node& n, const std::string& name, int64_t fallback) {
  for (const NamedArgument& a : n.inputs)
    if (a.name == name && a.arg.kind == Argument::Kind::Int) return a.arg.as<int64_t>();
  return fallback;
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

}  // namespace

const std::vector<std::string>& reorderable_ops() {
  static const std::vector<std::string> ops = {"mm", "bmm", "addmm", "baddbmm", "linear", "matmul", "convolution",
                                               "sum", "mean", "_softmax", "softmax", "_log_softmax", "log_softmax"};
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
  if (op == "convolution") {
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
  if (op == "_softmax" || op == "softmax" || op == "_log_softmax" || op == "log_softmax")
    return tensor_at(in, 0, n).size(int_argument(n, "dim", -1));
  return 0;
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
  if (op == "convolution") {
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

std::optional<std::vector<c10::IValue>> blocked_order(const Node& n, NodeCall& call, int64_t block) {
  const std::string op = reduction_op_name(n);
  const std::vector<c10::IValue>& in = call.inputs;
  const int64_t length = reduction_length(n, in);
  if (block <= 0 || length <= block) return std::nullopt;
  at::Tensor total;
  auto add = [&](const at::Tensor& partial) { total = total.defined() ? total.add(partial) : partial; };  // in the output dtype
  if (auto l = matmul_layout(op, in)) {
    const at::Tensor a = tensor_at(in, l->a, n), b = tensor_at(in, l->b, n);
    const int64_t a_dim = l->a_dim < 0 ? l->a_dim + a.dim() : l->a_dim;
    for (int64_t s = 0; s < length; s += block) {
      const int64_t len = std::min(block, length - s);
      std::vector<c10::IValue> part = in;
      part[l->a] = a.narrow(a_dim, s, len);
      part[l->b] = b.narrow(l->b_dim, s, len);
      if (l->bias && s > 0) part[*l->bias] = at::zeros_like(tensor_at(in, *l->bias, n));  // the bias is added once
      add(call.rerun(part).at(0).toTensor());
    }
    return std::vector<c10::IValue>{total};
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
      add(partial);
    }
    return std::vector<c10::IValue>{total};
  }
  return std::nullopt;
}

}  // namespace pt2diff
