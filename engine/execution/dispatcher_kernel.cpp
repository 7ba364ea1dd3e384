// engine/execution/dispatcher_kernel.cpp — ATen ops called by name through the c10 dispatcher
// (boxed), arguments marshalled from the op schema. The only file that includes Dispatcher.h.
#include <ATen/ScalarOps.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <fmt/format.h>

#include "engine/execution/kernel.h"
#include "engine/execution/op_catalog.h"
#include "pt2diff/error.h"

namespace pt2diff {

namespace {

c10::ScalarType to_c10(DType d) { return static_cast<c10::ScalarType>(static_cast<int8_t>(d)); }

c10::MemoryFormat to_c10(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::ChannelsLast: return c10::MemoryFormat::ChannelsLast;
    case MemoryFormat::ChannelsLast3d: return c10::MemoryFormat::ChannelsLast3d;
    case MemoryFormat::Preserve: return c10::MemoryFormat::Preserve;
    default: return c10::MemoryFormat::Contiguous;
  }
}

c10::Layout to_c10(Layout l) {
  switch (l) {
    case Layout::SparseCoo: return c10::kSparse;
    case Layout::SparseCsr: return c10::kSparseCsr;
    case Layout::SparseCsc: return c10::kSparseCsc;
    case Layout::SparseBsr: return c10::kSparseBsr;
    case Layout::SparseBsc: return c10::kSparseBsc;
    case Layout::Mkldnn: return c10::kMkldnn;
    default: return c10::kStrided;
  }
}

/// The fp64 reference keeps every floating computation in float64: dtype arguments that name a
/// lower floating type (casts, factories, `sum(dtype=)`) become float64. float8 stays: no fp64
/// kernel consumes it and its nodes are reported as not comparable.
DType reference_dtype(DType d, Precision p) {
  if (p == Precision::Widened && (d == DType::Half || d == DType::BFloat16)) return DType::Float;
  if (p == Precision::Fp64 && (d == DType::Half || d == DType::BFloat16 || d == DType::Float)) return DType::Double;
  if (p == Precision::Fp64 && d == DType::ComplexHalf) return DType::ComplexDouble;
  if (p == Precision::Fp64 && d == DType::ComplexFloat) return DType::ComplexDouble;
  return d;
}

c10::TypePtr unwrap_optional(const c10::TypePtr& t) {
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType();
  return t;
}

bool wants_tensor(const c10::TypePtr& t) { return unwrap_optional(t)->kind() == c10::TypeKind::TensorType; }
bool wants_float(const c10::TypePtr& t) { return unwrap_optional(t)->kind() == c10::TypeKind::FloatType; }

/// A Python number in a Tensor slot (`aten.mul.Tensor(x, 2.5)`) is a wrapped-number tensor in
/// eager; an ordinary 0-dim tensor would change type promotion.
at::Tensor wrapped_number(const c10::IValue& v) {
  c10::Scalar s = v.isDouble() ? c10::Scalar(v.toDouble()) : v.isBool() ? c10::Scalar(v.toBool()) : c10::Scalar(v.toInt());
  return at::native::wrapped_scalar_tensor(s);
}

class DispatcherKernel : public Kernel {
 public:
  DispatcherKernel(c10::OperatorHandle op, const Node& node) : op_(std::move(op)) {
    const auto& schema = op_.schema();
    // Map each schema argument to the node input that carries it (by name), once.
    for (const c10::Argument& sa : schema.arguments()) {
      int index = -1;
      for (size_t i = 0; i < node.inputs.size(); ++i)
        if (node.inputs[i].name == sa.name()) index = static_cast<int>(i);
      slots_.push_back(index);
    }
    std::string name = schema.name();
    is_softmax_ = name == "aten::_softmax" || name == "aten::_log_softmax";
    is_metadata_assert_ = name == "aten::_assert_tensor_metadata";
    is_bitcast_ = name == "aten::view" && schema.overload_name() == "dtype";
    is_random_ = op_.hasTag(at::Tag::nondeterministic_seeded);
    for (const c10::Argument& a : schema.arguments())
      if (a.alias_info() && a.alias_info()->isWrite()) {
        mutates_ = true;
        written_.push_back(a.name());
      }
    // aten::batch_norm, native_batch_norm (a training step's graph) and instance_norm in training update their running
    // statistics in place, though their schema marks no argument written (the training IR keeps them whole).
    if (name == "aten::batch_norm" || name == "aten::native_batch_norm" || name == "aten::instance_norm") {
      const char* flag = name == "aten::instance_norm" ? "use_input_stats" : "training";
      const NamedArgument* training = node.input(flag);
      if (training && training->arg.kind == Argument::Kind::Bool && training->arg.as<bool>())
        for (const char* stat : {"running_mean", "running_var"})
          if (const NamedArgument* a = node.input(stat); a && !a->arg.tensor_values().empty()) {
            mutates_ = true;
            written_.push_back(stat);
          }
    }
    for (const c10::Argument& r : schema.returns()) {
      aliases_ = aliases_ || r.alias_info() != nullptr;
      std::string of;  // the argument in the same alias set: `Tensor(a) self -> Tensor(a)`, `Tensor(a!) self -> Tensor(a!)`
      if (r.alias_info())
        for (const c10::Argument& a : schema.arguments())
          if (of.empty() && a.alias_info())
            for (const auto& set : r.alias_info()->beforeSets())
              if (a.alias_info()->beforeSets().count(set)) of = a.name();
      alias_args_.push_back(of);
    }
    reruns_exactly_ = (op_.hasTag(at::Tag::pointwise) || aliases_) && !is_random_ && !mutates_ && !is_bitcast_ &&
                      !is_metadata_assert_;
    for (const NamedArgument& a : node.inputs)
      if (a.arg.kind == Argument::Kind::Device && runs_elsewhere(a.arg.as<Device>()))
        device_rewrite_ = fmt::format("{} {} -> cpu", a.name, a.arg.as<Device>().str());
  }

  bool is_random() const override { return is_random_; }
  bool mutates_inputs() const override { return mutates_; }
  std::vector<std::string> written_arguments() const override { return written_; }
  bool output_may_alias_input() const override { return aliases_; }
  std::vector<std::string> output_alias_arguments() const override { return alias_args_; }
  std::string device_rewrite() const override { return device_rewrite_; }
  bool reruns_exactly() const override { return reruns_exactly_; }

  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    // The reference run has no lower dtypes to assert on; the native run keeps the check.
    if (is_metadata_assert_ && ctx.precision != Precision::Native) {
      record(ctx, "skipped (asserts the native dtype)");
      return;
    }
    if (ctx.precision == Precision::Fp64 && ctx.not_comparable && (is_bitcast_ || touches_float8(node, g)))
      ctx.not_comparable->push_back(node.name);
    torch::jit::Stack stack = arguments(node, g, f, ctx, {});
    op_.callBoxed(stack);
    if (stack.size() != node.outputs.size() && !(node.outputs.empty() && stack.empty()))
      throw Error(Error::Kind::Internal, fmt::format("node '{}' ({}) returned {} values for {} outputs", node.name, node.target,
                                                     stack.size(), node.outputs.size()));
    for (size_t i = 0; i < node.outputs.size(); ++i) store_output(node.outputs[i], std::move(stack[i]), f);
  }

 protected:
  /// The call's stack from the node's inputs by schema name; `given` supplies arguments by name
  /// instead (auto_functionalized's regenerated mutable arguments).
  torch::jit::Stack arguments(const Node& node, const Graph& g, const Frame& f, const ExecContext& ctx,
                              const std::unordered_map<std::string, c10::IValue>& given) const {
    const auto& schema = op_.schema();
    torch::jit::Stack stack;
    stack.reserve(schema.arguments().size());
    for (size_t i = 0; i < schema.arguments().size(); ++i) {
      const c10::Argument& sa = schema.arguments()[i];
      if (auto it = given.find(sa.name()); it != given.end()) {
        stack.push_back(it->second);
        continue;
      }
      if (slots_[i] < 0) {
        if (!sa.default_value())
          throw Error(Error::Kind::BadArchive, fmt::format("node '{}' ({}) gives no value for argument '{}', which has no default",
                                                           node.name, node.target, sa.name()));
        stack.push_back(*sa.default_value());
        continue;
      }
      stack.push_back(convert(node.inputs[static_cast<size_t>(slots_[i])].arg, sa, f, g, ctx));
      if (is_softmax_ && sa.name() == "half_to_float" && ctx.precision != Precision::Native && stack.back().toBool()) {
        stack.back() = false;
        record(ctx, "half_to_float=True -> False");
      }
    }
    return stack;
  }

  c10::OperatorHandle op_;

 private:
  static bool touches_float8(const Node& node, const Graph& g) {
    for (ValueId v : node.output_values())
      if (g.value(v).meta && is_float8(g.value(v).meta->dtype)) return true;
    for (ValueId v : node.input_values())
      if (g.value(v).meta && is_float8(g.value(v).meta->dtype)) return true;
    return false;
  }

  c10::IValue convert(const Argument& a, const c10::Argument& sa, const Frame& f, const Graph& g, const ExecContext& ctx) const {
    using K = Argument::Kind;
    const c10::TypePtr type = sa.real_type();
    switch (a.kind) {
      case K::None: return c10::IValue();
      case K::Tensor: case K::OptionalTensor: {
        ValueId v = a.as<ValueId>();
        return v == kNoValue ? c10::IValue() : f.at(v, g);
      }
      case K::Tensors: {
        c10::List<at::Tensor> list;
        for (ValueId v : a.as<std::vector<ValueId>>()) list.push_back(f.at(v, g).toTensor());
        return list;
      }
      case K::OptionalTensors: {
        c10::List<std::optional<at::Tensor>> list;
        for (ValueId v : a.as<std::vector<ValueId>>())
          list.push_back(v == kNoValue ? std::optional<at::Tensor>() : std::optional<at::Tensor>(f.at(v, g).toTensor()));
        return list;
      }
      case K::Int: case K::Float: case K::Bool: case K::SymInt: case K::SymFloat: case K::SymBool: {
        c10::IValue n = scalar_value(a, f, g);
        if (wants_tensor(type)) return wrapped_number(n);
        if (wants_float(type) && n.isInt()) return static_cast<double>(n.toInt());
        return n;
      }
      case K::Ints: return c10::List<int64_t>(a.as<std::vector<int64_t>>());
      case K::SymInts: {
        c10::List<int64_t> list;
        for (const SymArg& s : a.as<std::vector<SymArg>>()) list.push_back(sym_value(s, f, g).toInt());
        return list;
      }
      case K::Floats: return c10::List<double>(a.as<std::vector<double>>());
      case K::Bools: {
        c10::List<bool> list;
        for (bool b : a.as<std::vector<bool>>()) list.push_back(b);
        return list;
      }
      case K::String: return a.as<std::string>();
      case K::Strings: return c10::List<std::string>(a.as<std::vector<std::string>>());
      case K::Complex: return c10::complex<double>(a.as<std::complex<double>>().real(), a.as<std::complex<double>>().imag());
      case K::ScalarType: {
        DType want = reference_dtype(a.as<DType>(), ctx.precision);
        if (want != a.as<DType>())
          record(ctx, fmt::format("{} {} -> {}", sa.name(), dtype_name(a.as<DType>()), dtype_name(want)));
        return to_c10(want);
      }
      case K::MemoryFormat: return to_c10(a.as<MemoryFormat>());
      case K::Layout: return to_c10(a.as<Layout>());
      case K::Device: {
        // A device baked in by the export (factories, casts, metadata asserts) follows the run.
        const Device& d = a.as<Device>();
        const c10::Device to = run_device(d, ctx);
        if (to.str() != d.str() && !(d.index < 0 && to.type() == c10::DeviceType::CUDA && d.type == "cuda"))
          record(ctx, fmt::format("{} {} -> {}", sa.name(), d.str(), to.str()));
        return to;
      }
      default:
        throw Error(Error::Kind::Unsupported, fmt::format("argument '{}' of kind {} cannot be passed to {}", sa.name(),
                                                          argument_kind_name(a.kind), op_.schema().name()));
    }
  }

  void record(const ExecContext& ctx, const std::string& what) const {
    if (ctx.fixups) ctx.fixups->insert(fmt::format("{}: {}", short_name(), what));
  }
  /// "aten.to.dtype", as users see ops in graphs.
  std::string short_name() const {
    std::string name = op_.schema().name();
    std::replace(name.begin(), name.end(), ':', '.');
    name.erase(name.find(".."), 1);
    return name + "." + (op_.schema().overload_name().empty() ? "default" : op_.schema().overload_name());
  }

  static bool runs_elsewhere(const Device& d) { return d.type != "cpu" && d.type != "meta"; }

  std::vector<int> slots_;
  std::string device_rewrite_;
  bool is_softmax_ = false;
  bool is_metadata_assert_ = false;
  bool is_bitcast_ = false;
  bool is_random_ = false;
  bool mutates_ = false;
  bool aliases_ = false;
  std::vector<std::string> alias_args_;  ///< by return: the argument it aliases, or ""
  bool reruns_exactly_ = false;
  std::vector<std::string> written_;
};

/// torch._higher_order_ops.auto_functionalize.clone_preserve_strides: a copy with the same strides
/// and storage offset, over a fresh storage just large enough.
at::Tensor clone_preserve_strides(const at::Tensor& x) {
  int64_t needed = x.numel() ? x.storage_offset() + 1 : 0;
  for (int64_t d = 0; d < x.dim() && x.numel(); ++d) needed += (x.size(d) - 1) * x.stride(d);
  const at::Tensor buffer = x.as_strided({needed}, {1}, 0).clone();
  return buffer.as_strided(x.sizes(), x.strides(), x.storage_offset());
}

/// auto_functionalized(op, **kwargs) and auto_functionalized_v2(op, _all_bases=..., **kwargs): the
/// functional form of a custom op that mutates its inputs. The op runs on clones (v1: of each mutated
/// argument; v2: of the bases, each mutated argument regenerated as its view) and the node returns
/// the op's outputs followed by the clones, as torch's dense implementation does.
class AutoFunctionalizedKernel final : public DispatcherKernel {
 public:
  AutoFunctionalizedKernel(c10::OperatorHandle op, const Node& node, bool v2) : DispatcherKernel(op, node), v2_(v2) {
    for (const c10::Argument& a : op_.schema().arguments())
      if (a.alias_info() && a.alias_info()->isWrite()) mutable_.push_back(a);
  }

  bool mutates_inputs() const override { return false; }  // it mutates clones
  std::vector<std::string> written_arguments() const override { return {}; }
  bool output_may_alias_input() const override { return false; }  // it returns the op's outputs and the clones
  bool reruns_exactly() const override { return false; }

  void run(const Node& node, const Graph& g, Frame& f, const ExecContext& ctx) const override {
    std::unordered_map<std::string, c10::IValue> given;
    std::vector<c10::IValue> clones;
    if (!v2_) {
      for (const c10::Argument& a : mutable_) {
        const NamedArgument* in = node.input(a.name());
        c10::IValue value = in ? value_of(in->arg, f, g) : c10::IValue();
        if (value.isTensor()) value = clone_preserve_strides(value.toTensor());
        else if (value.isTensorList()) {
          c10::List<at::Tensor> copies;
          for (const at::Tensor& t : value.toTensorList()) copies.push_back(clone_preserve_strides(t));
          value = copies;
        }
        given[a.name()] = value;
        clones.push_back(value);
      }
    } else {
      std::vector<at::Tensor> bases;
      if (const NamedArgument* all = node.input("_all_bases"))
        for (ValueId v : all->arg.as<std::vector<ValueId>>()) bases.push_back(f.at(v, g).toTensor());
      std::vector<int64_t> only;
      bool clone_all = true;
      if (const NamedArgument* o = node.input("_only_clone_these_bases"); o && o->arg.kind == Argument::Kind::Ints) {
        only = o->arg.as<std::vector<int64_t>>();
        clone_all = false;
      }
      for (size_t i = 0; i < bases.size(); ++i)
        if (clone_all || std::find(only.begin(), only.end(), static_cast<int64_t>(i)) != only.end())
          bases[i] = clone_preserve_strides(bases[i]);
      for (const c10::Argument& a : mutable_) {
        if (a.real_type()->kind() == c10::TypeKind::ListType) {
          const NamedArgument* length = node.input("_" + a.name() + "_length");
          if (!length || length->arg.kind == Argument::Kind::None) {
            given[a.name()] = c10::IValue();
            continue;
          }
          c10::List<at::Tensor> views;
          for (int64_t i = 0; i < length->arg.as<int64_t>(); ++i)
            views.push_back(regenerate(node, f, g, fmt::format("_{}_{}", a.name(), i), bases).toTensor());
          given[a.name()] = views;
        } else {
          given[a.name()] = regenerate(node, f, g, "_" + a.name(), bases);
        }
      }
      clones.assign(bases.begin(), bases.end());
    }
    torch::jit::Stack stack = arguments(node, g, f, ctx, given);
    op_.callBoxed(stack);
    // (op outputs..., clones...): an op returning nothing contributes one None.
    std::vector<c10::IValue> outs;
    if (op_.schema().returns().empty()) outs.emplace_back();
    for (c10::IValue& v : stack) outs.push_back(std::move(v));
    for (c10::IValue& v : clones) outs.push_back(std::move(v));
    if (outs.size() != node.outputs.size())
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}' ({} of {}) has {} outputs, the op and its mutated arguments give {}",
                                                       node.name, node.target, op_.schema().name(), node.outputs.size(), outs.size()));
    for (size_t i = 0; i < outs.size(); ++i) store_output(node.outputs[i], std::move(outs[i]), f);
  }

 private:
  static c10::IValue value_of(const Argument& a, const Frame& f, const Graph& g) {
    if (a.kind == Argument::Kind::Tensor || a.kind == Argument::Kind::OptionalTensor) {
      const ValueId v = a.as<ValueId>();
      return v == kNoValue ? c10::IValue() : f.at(v, g);
    }
    if (a.kind == Argument::Kind::Tensors) {
      c10::List<at::Tensor> list;
      for (ValueId v : a.as<std::vector<ValueId>>()) list.push_back(f.at(v, g).toTensor());
      return list;
    }
    return c10::IValue();
  }

  static std::vector<int64_t> ints(const NamedArgument* a, const Frame& f, const Graph& g) {
    if (a->arg.kind == Argument::Kind::Ints) return a->arg.as<std::vector<int64_t>>();
    std::vector<int64_t> out;
    if (a->arg.kind == Argument::Kind::SymInts)
      for (const SymArg& s : a->arg.as<std::vector<SymArg>>()) out.push_back(sym_value(s, f, g).toInt());
    return out;
  }

  /// One mutated argument rebuilt from the (cloned) bases: as_strided, a slice, an alias, the base.
  c10::IValue regenerate(const Node& node, const Frame& f, const Graph& g, const std::string& prefix,
                         const std::vector<at::Tensor>& bases) const {
    const NamedArgument* index = node.input(prefix + "_base_index");
    if (!index || index->arg.kind == Argument::Kind::None) return c10::IValue();
    const int64_t i = scalar_value(index->arg, f, g).toInt();
    if (i < 0 || static_cast<size_t>(i) >= bases.size())
      throw Error(Error::Kind::BadArchive, fmt::format("node '{}': {}_base_index {} is outside _all_bases ({} tensors)", node.name,
                                                       prefix, i, bases.size()));
    const at::Tensor& base = bases[static_cast<size_t>(i)];
    if (node.input(prefix + "_alias")) return base.alias();
    if (const NamedArgument* offset = node.input(prefix + "_storage_offset"))
      return base.as_strided(ints(node.input(prefix + "_size"), f, g), ints(node.input(prefix + "_stride"), f, g),
                             scalar_value(offset->arg, f, g).toInt());
    if (const NamedArgument* dim = node.input(prefix + "_slice_dim")) {
      auto number = [&](const std::string& what) -> std::optional<int64_t> {
        const NamedArgument* a = node.input(prefix + what);
        if (!a || a->arg.kind == Argument::Kind::None) return std::nullopt;
        return scalar_value(a->arg, f, g).toInt();
      };
      return base.slice(scalar_value(dim->arg, f, g).toInt(), number("_slice_start"), number("_slice_end"));
    }
    return base;
  }

  bool v2_;
  std::vector<c10::Argument> mutable_;
};

}  // namespace

std::unique_ptr<Kernel> make_auto_functionalized_kernel(const Node& node, std::string& why) {
  const NamedArgument* op = nullptr;
  for (const NamedArgument& a : node.inputs)
    if (a.arg.kind == Argument::Kind::Operator) op = &a;
  if (!op) {
    why = "names no mutated operator";
    return nullptr;
  }
  const std::string target = op->arg.as<std::string>();
  auto name = parse_op_target(target.rfind("torch.ops.", 0) == 0 ? target : "torch.ops." + target);
  std::optional<c10::OperatorHandle> handle;
  if (name) handle = c10::Dispatcher::singleton().findSchema({name->ns + "::" + name->name, name->overload});
  if (!handle) {
    why = fmt::format("its mutated op {} is not in the C++ dispatcher: a custom op defined in Python, or its C++ library is not "
                      "loaded (--load-library)", target);
    return nullptr;
  }
  return std::make_unique<AutoFunctionalizedKernel>(*handle, node, node.target == "torch.ops.higher_order.auto_functionalized_v2");
}

std::unique_ptr<Kernel> make_dispatcher_kernel(const Node& node, std::string& why) {
  auto name = parse_op_target(node.target);
  std::optional<c10::OperatorHandle> handle;
  if (name) handle = c10::Dispatcher::singleton().findSchema({name->ns + "::" + name->name, name->overload});
  if (!handle) {
    why = "not in the C++ dispatcher";
    return nullptr;
  }
  return std::make_unique<DispatcherKernel>(*handle, node);
}

}  // namespace pt2diff
