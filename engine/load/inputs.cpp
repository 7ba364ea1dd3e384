// engine/load/inputs.cpp — reading, drawing and binding user inputs against the signature.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <c10/core/ScalarType.h>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>

#include "graphs/regular_file.h"
#include "engine/load/torch_save.h"
#include "pt2diff/error.h"
#include "pt2diff/program.h"

namespace pt2diff {

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(Error::Kind::BadInputs, what); }

std::string sizes_str(c10::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes.begin(), sizes.end(), ", ")); }

bool is_user_facing(const InputSpec& s) {
  return s.kind == InputSpec::Kind::UserInput || s.kind == InputSpec::Kind::ConstantInput;
}

/// The name a user knows an input by: the graph's placeholder name, the constant's name, or the
/// forward() argument name for literal inputs.
std::string spec_name(const Program& p, const InputSpec& s, size_t user_index) {
  if (s.kind == InputSpec::Kind::ConstantInput) return s.target;
  auto values = s.arg.values();
  if (!values.empty()) return p.ir.graph.value(values.front()).name;
  if (user_index < p.ir.forward_arg_names.size()) return p.ir.forward_arg_names[user_index];
  return fmt::format("input #{}", user_index);
}

std::string expected_str(const Program& p, const InputSpec& s) {
  if (s.kind == InputSpec::Kind::ConstantInput) return constant_str(s.constant);
  if (s.arg.kind == Argument::Kind::Tensor) {
    const Value& v = p.ir.graph.value(s.arg.as<ValueId>());
    if (v.meta) return fmt::format("{}{} {}", dtype_name(v.meta->dtype), v.meta->shape_str(), v.meta->device.str());
    return "tensor";
  }
  return std::string(argument_kind_name(s.arg.kind));
}

bool same_scalar(const InputValue& given, const ConstantValue& want) {
  if (std::holds_alternative<std::monostate>(want)) return std::holds_alternative<std::monostate>(given);
  if (auto w = std::get_if<bool>(&want)) return std::holds_alternative<bool>(given) && std::get<bool>(given) == *w;
  if (auto w = std::get_if<std::string>(&want))
    return std::holds_alternative<std::string>(given) && std::get<std::string>(given) == *w;
  double wv = std::holds_alternative<int64_t>(want) ? static_cast<double>(std::get<int64_t>(want)) : std::get<double>(want);
  if (auto g = std::get_if<int64_t>(&given)) return static_cast<double>(*g) == wv;
  if (auto g = std::get_if<double>(&given)) return *g == wv;
  return false;
}

/// True for a dynamic dim written as a bare symbol ("s77"): those can be bound and range-checked.
bool is_plain_symbol(const std::string& expr) {
  if (expr.empty() || !std::isalpha(static_cast<unsigned char>(expr[0]))) return false;
  return std::all_of(expr.begin(), expr.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void check_tensor(const Program& p, const std::string& name, const Value& v, const at::Tensor& t, BoundInputs& bound) {
  if (!v.meta) return;
  const TensorMeta& m = *v.meta;
  const std::string want = fmt::format("{}{}", dtype_name(m.dtype), m.shape_str());
  if (t.is_quantized())
    bad(fmt::format("input '{}' is a quantized tensor ({}), the graph was exported with {}: dequantize it (x.dequantize()) and "
                    "save again", name, c10::toString(t.scalar_type()), dtype_name(m.dtype)));
  if (static_cast<int8_t>(t.scalar_type()) != static_cast<int8_t>(m.dtype))
    bad(fmt::format("input '{}' has dtype {}, the graph was exported with {}: convert it (x.to(torch.{})) and save again",
                    name, dtype_name(static_cast<DType>(t.scalar_type())), dtype_name(m.dtype), dtype_name(m.dtype)));
  if (t.dim() != static_cast<int64_t>(m.sizes.size()))
    bad(fmt::format("input '{}' has {} dims {}, the graph expects {}", name, t.dim(), sizes_str(t.sizes()), want));
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    const SymInt& s = m.sizes[d];
    int64_t got = t.size(static_cast<int64_t>(d));
    if (s.is_static()) {
      if (got != *s.value)
        bad(fmt::format("input '{}' has shape {}, the graph expects {} (dim {} is static: re-export with a dynamic dim "
                        "to vary it)", name, sizes_str(t.sizes()), want, d));
      continue;
    }
    if (!is_plain_symbol(s.expr)) continue;  // derived dims ("2*s77") follow from the symbols
    auto range = p.ir.range_constraints.find(s.expr);
    if (range != p.ir.range_constraints.end()) {
      const RangeConstraint& rc = range->second;
      if ((rc.min && got < *rc.min) || (rc.max && got > *rc.max))
        bad(fmt::format("input '{}' dim {} is {}, outside the range [{}, {}] the graph was exported for (symbol {})", name, d, got,
                        rc.min ? std::to_string(*rc.min) : "-inf", rc.max ? std::to_string(*rc.max) : "inf", s.expr));
    }
    auto [it, fresh] = bound.symbols.emplace(s.expr, got);
    if (!fresh && it->second != got)
      bad(fmt::format("input '{}' dim {} is {}, but symbol {} is already {} from an earlier input: these dims must be equal",
                      name, d, got, s.expr, it->second));
  }
  // Files load on the CPU (a graph exported on cuda:0 included); the library API and Python may pass tensors
  // already on a GPU, which the runs use where they are (BackendOptions::device; bind_inputs checks they share one).
  if (!t.device().is_cpu() && !t.device().is_cuda())
    bad(fmt::format("input '{}' is on {}: pt2diff runs graphs on the CPU or a CUDA GPU (the graph was exported on {}): "
                    "pass a tensor with data there (x.cpu() or x.cuda())", name, t.device().str(), m.device.str()));
}

/// Every tensor input on one device: a graph's inputs are on one device, or the runs would move some of them.
void check_one_device(const BoundInputs& bound) {
  const BoundInputs::Entry* first = nullptr;
  for (const auto& e : bound.entries) {
    const auto* t = std::get_if<at::Tensor>(&e.value);
    if (!t || !t->defined()) continue;
    if (!first) {
      first = &e;
      continue;
    }
    const at::Device want = std::get<at::Tensor>(first->value).device();
    if (t->device() != want)
      bad(fmt::format("input '{}' is on {} but input '{}' is on {}: pass every input on one device (x.to('{}'))", e.name,
                      t->device().str(), first->name, want.str(), want.str()));
  }
}

void check_value(const Program& p, const InputSpec& spec, const std::string& name, const InputValue& value, BoundInputs& bound) {
  if (spec.kind == InputSpec::Kind::ConstantInput) {
    if (!same_scalar(value, spec.constant))
      bad(fmt::format("input '{}' is {}, but the export specialized it to {}: the graph computes with {}; pass that value or "
                      "re-export with the new one", name, describe(value), constant_str(spec.constant), constant_str(spec.constant)));
    return;
  }
  switch (spec.arg.kind) {
    case Argument::Kind::Tensor: {
      const auto* t = std::get_if<at::Tensor>(&value);
      if (!t || !t->defined()) bad(fmt::format("input '{}' must be a tensor ({}), got {}", name, expected_str(p, spec), describe(value)));
      check_tensor(p, name, p.ir.graph.value(spec.arg.as<ValueId>()), *t, bound);
      return;
    }
    case Argument::Kind::SymInt: {
      const auto* i = std::get_if<int64_t>(&value);
      if (!i) bad(fmt::format("input '{}' must be an int, got {}", name, describe(value)));
      const SymArg& s = spec.arg.as<SymArg>();
      if (!s.is_literal()) bound.symbols.emplace(p.ir.graph.value(s.value).name, *i);
      return;
    }
    case Argument::Kind::None:
      if (!std::holds_alternative<std::monostate>(value)) bad(fmt::format("input '{}' must be None, got {}", name, describe(value)));
      return;
    default:
      return;  // literal user inputs (ints, floats, strings) are baked into the graph
  }
}

}  // namespace

std::string describe(const InputValue& value) {
  struct {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(const at::Tensor& t) const {
      if (!t.defined()) return "an undefined tensor";
      return fmt::format("{}{} {}", dtype_name(static_cast<DType>(t.scalar_type())), sizes_str(t.sizes()), t.device().str());
    }
    std::string operator()(bool b) const { return b ? "bool True" : "bool False"; }
    std::string operator()(int64_t i) const { return fmt::format("int {}", i); }
    std::string operator()(double d) const { return fmt::format("float {}", d); }
    std::string operator()(const std::string& s) const { return fmt::format("str '{}'", s); }
  } visit;
  return std::visit(visit, value);
}

UserInputs load_inputs(const std::string& path) {
  if (auto what = not_a_readable_file(path)) bad(fmt::format("{}: {}", path, *what));
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return user_inputs_from_torch_save(ss.str(), path);
}

UserInputs random_inputs(const Program& p, uint64_t seed) {
  UserInputs in;
  in.origin = fmt::format("random (seed {})", seed);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (const InputSpec& spec : p.ir.input_specs) {
    if (!is_user_facing(spec)) continue;
    if (spec.kind == InputSpec::Kind::ConstantInput) {
      std::visit([&](const auto& c) {
        using T = std::decay_t<decltype(c)>;
        in.args.push_back(InputValue(T(c)));
      }, spec.constant);
      continue;
    }
    if (spec.arg.kind == Argument::Kind::SymInt) {
      const SymArg& s = spec.arg.as<SymArg>();
      auto hint = s.is_literal() ? std::optional<double>(static_cast<double>(std::get<int64_t>(s.literal)))
                                 : p.ir.graph.value(s.value).sym_hint;
      if (!hint) throw Error(Error::Kind::BadInputs, "cannot draw a random int input: the archive records no example value for it");
      in.args.push_back(static_cast<int64_t>(*hint));
      continue;
    }
    if (spec.arg.kind != Argument::Kind::Tensor) {
      in.args.push_back(std::monostate{});
      continue;
    }
    const Value& v = p.ir.graph.value(spec.arg.as<ValueId>());
    if (!v.meta) bad(fmt::format("cannot draw input '{}' at random: the archive has no metadata for it", v.name));
    std::vector<int64_t> sizes;
    for (const SymInt& s : v.meta->sizes) {
      auto c = s.concrete();
      if (!c) bad(fmt::format("cannot draw input '{}' at random: dim {} has no example size", v.name, s.expr));
      sizes.push_back(*c);
    }
    auto dtype = static_cast<c10::ScalarType>(v.meta->dtype);
    at::Tensor t;
    if (v.meta->dtype == DType::Bool) {
      t = at::randint(0, 2, sizes, gen, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
    } else if (is_float8(v.meta->dtype)) {
      t = at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat)).to(dtype);
    } else if (is_floating(v.meta->dtype) || is_complex(v.meta->dtype)) {
      t = at::randn(sizes, gen, at::TensorOptions().dtype(dtype));
    } else {
      t = at::randint(0, 10, sizes, gen, at::TensorOptions().dtype(dtype));
    }
    in.args.push_back(t);
  }
  return in;
}

BoundInputs bind_inputs(const Program& p, const UserInputs& in) {
  std::vector<size_t> specs;  // user-facing spec indices, in signature order
  for (size_t i = 0; i < p.ir.input_specs.size(); ++i)
    if (is_user_facing(p.ir.input_specs[i])) specs.push_back(i);
  std::vector<std::string> names;
  for (size_t k = 0; k < specs.size(); ++k) names.push_back(spec_name(p, p.ir.input_specs[specs[k]], k));
  const std::string takes = fmt::format("the graph takes {} input{} ({})", specs.size(), specs.size() == 1 ? "" : "s",
                                        fmt::join(names, ", "));

  if (in.args.size() > specs.size())
    bad(fmt::format("{} gives {} positional inputs but {}", in.origin, in.args.size(), takes));
  std::vector<const InputValue*> given(specs.size(), nullptr);
  for (size_t k = 0; k < in.args.size(); ++k) given[k] = &in.args[k];
  for (const auto& [key, value] : in.kwargs) {
    size_t k = 0;
    while (k < specs.size() && names[k] != key &&
           !(k < p.ir.forward_arg_names.size() && p.ir.forward_arg_names[k] == key))
      ++k;
    if (k == specs.size()) bad(fmt::format("{} gives input '{}', which is not an input of the graph: {}", in.origin, key, takes));
    if (given[k]) bad(fmt::format("{} gives input '{}' twice (by position and by name)", in.origin, key));
    given[k] = &value;
  }
  BoundInputs bound;
  bound.origin = in.origin;
  for (size_t k = 0; k < specs.size(); ++k) {
    if (!given[k])
      bad(fmt::format("{} gives no value for input '{}' ({} positional, {} keyword given; {})", in.origin, names[k], in.args.size(),
                      in.kwargs.size(), takes));
    check_value(p, p.ir.input_specs[specs[k]], names[k], *given[k], bound);
    bound.entries.push_back({names[k], specs[k], *given[k]});
  }
  check_one_device(bound);
  return bound;
}

}  // namespace pt2diff
