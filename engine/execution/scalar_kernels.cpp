// engine/execution/scalar_kernels.cpp — symbolic scalar ops (_operator.*, torch.sym_*, math.*),
// which only exist in Python: computed here on ints, floats and bools with Python's semantics.
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "engine/execution/kernel.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

using Num = c10::IValue;

bool is_int(const Num& v) { return v.isInt() || v.isBool(); }
int64_t as_int(const Num& v) { return v.isBool() ? static_cast<int64_t>(v.toBool()) : v.toInt(); }
double as_double(const Num& v) { return v.isDouble() ? v.toDouble() : static_cast<double>(as_int(v)); }
bool truthy(const Num& v) { return v.isBool() ? v.toBool() : v.isInt() ? v.toInt() != 0 : v.toDouble() != 0.0; }

/// Python's floor division and modulo (round toward -inf), not C++'s truncation.
int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

using Binary = Num (*)(const Num&, const Num&);
using Unary = Num (*)(const Num&);

const std::map<std::string, Binary>& binaries() {
  static const std::map<std::string, Binary> ops = {
      {"_operator.add", [](const Num& a, const Num& b) -> Num { return is_int(a) && is_int(b) ? Num(as_int(a) + as_int(b)) : Num(as_double(a) + as_double(b)); }},
      {"_operator.sub", [](const Num& a, const Num& b) -> Num { return is_int(a) && is_int(b) ? Num(as_int(a) - as_int(b)) : Num(as_double(a) - as_double(b)); }},
      {"_operator.mul", [](const Num& a, const Num& b) -> Num { return is_int(a) && is_int(b) ? Num(as_int(a) * as_int(b)) : Num(as_double(a) * as_double(b)); }},
      {"_operator.truediv", [](const Num& a, const Num& b) -> Num { return as_double(a) / as_double(b); }},
      {"_operator.floordiv", [](const Num& a, const Num& b) -> Num {
         return is_int(a) && is_int(b) ? Num(floordiv(as_int(a), as_int(b))) : Num(std::floor(as_double(a) / as_double(b))); }},
      {"_operator.mod", [](const Num& a, const Num& b) -> Num {
         if (is_int(a) && is_int(b)) return as_int(a) - floordiv(as_int(a), as_int(b)) * as_int(b);
         double r = std::fmod(as_double(a), as_double(b));
         return (r != 0 && ((r < 0) != (as_double(b) < 0))) ? r + as_double(b) : r; }},
      {"_operator.pow", [](const Num& a, const Num& b) -> Num {
         if (is_int(a) && is_int(b) && as_int(b) >= 0) return static_cast<int64_t>(std::llround(std::pow(as_double(a), as_double(b))));
         return std::pow(as_double(a), as_double(b)); }},
      {"_operator.eq", [](const Num& a, const Num& b) -> Num { return as_double(a) == as_double(b); }},
      {"_operator.ne", [](const Num& a, const Num& b) -> Num { return as_double(a) != as_double(b); }},
      {"_operator.lt", [](const Num& a, const Num& b) -> Num { return as_double(a) < as_double(b); }},
      {"_operator.le", [](const Num& a, const Num& b) -> Num { return as_double(a) <= as_double(b); }},
      {"_operator.gt", [](const Num& a, const Num& b) -> Num { return as_double(a) > as_double(b); }},
      {"_operator.ge", [](const Num& a, const Num& b) -> Num { return as_double(a) >= as_double(b); }},
      {"_operator.and_", [](const Num& a, const Num& b) -> Num { return truthy(a) && truthy(b); }},
      {"_operator.or_", [](const Num& a, const Num& b) -> Num { return truthy(a) || truthy(b); }},
      {"torch.sym_max", [](const Num& a, const Num& b) -> Num { return is_int(a) && is_int(b) ? Num(std::max(as_int(a), as_int(b))) : Num(std::max(as_double(a), as_double(b))); }},
      {"torch.sym_min", [](const Num& a, const Num& b) -> Num { return is_int(a) && is_int(b) ? Num(std::min(as_int(a), as_int(b))) : Num(std::min(as_double(a), as_double(b))); }},
  };
  return ops;
}

const std::map<std::string, Unary>& unaries() {
  static const std::map<std::string, Unary> ops = {
      {"_operator.neg", [](const Num& a) -> Num { return is_int(a) ? Num(-as_int(a)) : Num(-as_double(a)); }},
      {"_operator.abs", [](const Num& a) -> Num { return is_int(a) ? Num(std::abs(as_int(a))) : Num(std::fabs(as_double(a))); }},
      {"_operator.not_", [](const Num& a) -> Num { return !truthy(a); }},
      {"torch.sym_not", [](const Num& a) -> Num { return !truthy(a); }},
      {"torch.sym_float", [](const Num& a) -> Num { return as_double(a); }},
      {"torch.sym_int", [](const Num& a) -> Num { return static_cast<int64_t>(as_double(a)); }},
      {"torch.sym_sqrt", [](const Num& a) -> Num { return std::sqrt(as_double(a)); }},
      {"math.sqrt", [](const Num& a) -> Num { return std::sqrt(as_double(a)); }},
      {"math.ceil", [](const Num& a) -> Num { return static_cast<int64_t>(std::ceil(as_double(a))); }},
      {"math.floor", [](const Num& a) -> Num { return static_cast<int64_t>(std::floor(as_double(a))); }},
      {"math.trunc", [](const Num& a) -> Num { return static_cast<int64_t>(std::trunc(as_double(a))); }},
  };
  return ops;
}

Num operand(const Argument& a, const Frame& f, const Graph& g) {
  Num n = scalar_value(a, f, g);
  if (n.isNone()) throw Error(Error::Kind::Unsupported, fmt::format("a scalar op got a {} operand", argument_kind_name(a.kind)));
  return n;
}

class ScalarKernel final : public Kernel {
 public:
  explicit ScalarKernel(std::string target) : target_(std::move(target)) {}
  void run(const Node& node, const Graph& g, Frame& f, const ExecContext&) const override {
    std::vector<Num> args;
    for (const NamedArgument& in : node.inputs) args.push_back(operand(in.arg, f, g));
    Num result;
    if (auto b = binaries().find(target_); b != binaries().end() && args.size() == 2) {
      result = b->second(args[0], args[1]);
    } else if (auto u = unaries().find(target_); u != unaries().end() && args.size() == 1) {
      result = u->second(args[0]);
    } else if (target_ == "torch.sym_ite" && args.size() == 3) {
      result = truthy(args[0]) ? args[1] : args[2];
    } else if (target_ == "torch.sym_sum") {
      int64_t total = 0;
      for (const Num& a : args) total += as_int(a);
      result = total;
    } else {
      throw Error(Error::Kind::Unsupported, fmt::format("node '{}': {} with {} operands", node.name, target_, args.size()));
    }
    for (const Argument& out : node.outputs) store_output(out, result, f);
  }

 private:
  std::string target_;
};

}  // namespace

bool is_scalar_op(const std::string& target) {
  return binaries().count(target) || unaries().count(target) || target == "torch.sym_ite" || target == "torch.sym_sum";
}

std::unique_ptr<Kernel> make_scalar_kernel(const Node& node, std::string& why) {
  if (is_scalar_op(node.target)) return std::make_unique<ScalarKernel>(node.target);
  why = "a scalar op pt2diff does not implement";
  return nullptr;
}

}  // namespace pt2diff
