// graphs/graph_text.cpp — printing the IR.
#include "graphs/graph_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pt2diff {

namespace {
std::string value_ref(const Graph& g, ValueId v) { return v == kNoValue ? "None" : "%" + g.value(v).name; }

std::string sym_text(const Graph& g, const SymArg& s) {
  if (!s.is_literal()) return value_ref(g, s.value);
  return std::visit([](auto x) { return fmt::format("{}", x); }, s.literal);
}

std::string value_decl(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  if (value.meta) return fmt::format("%{}: {}{}", value.name, dtype_name(value.meta->dtype), value.meta->shape_str());
  return fmt::format("%{}: {}", value.name, value_kind_name(value.kind));
}
}  // namespace

std::string short_target(const std::string& target) {
  const std::string prefix = "torch.ops.";
  return target.rfind(prefix, 0) == 0 ? target.substr(prefix.size()) : target;
}

std::string argument_text(const Graph& g, const Argument& a) {
  using K = Argument::Kind;
  auto refs = [&](const std::vector<ValueId>& ids) {
    std::vector<std::string> parts;
    for (ValueId v : ids) parts.push_back(value_ref(g, v));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  };
  auto syms = [&](const std::vector<SymArg>& list) {
    std::vector<std::string> parts;
    for (const SymArg& s : list) parts.push_back(sym_text(g, s));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  };
  switch (a.kind) {
    case K::None: return "None";
    case K::Tensor: case K::OptionalTensor: case K::CustomObj: return value_ref(g, a.as<ValueId>());
    case K::Tensors: case K::OptionalTensors: return refs(a.as<std::vector<ValueId>>());
    case K::NestedTensors: {
      std::vector<std::string> parts;
      for (const auto& l : a.as<std::vector<std::vector<ValueId>>>()) parts.push_back(refs(l));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case K::Int: return std::to_string(a.as<int64_t>());
    case K::Ints: return fmt::format("[{}]", fmt::join(a.as<std::vector<int64_t>>(), ", "));
    case K::IntLists: return fmt::format("{}", a.as<std::vector<std::vector<int64_t>>>());
    case K::Float: return fmt::format("{}", a.as<double>());
    case K::Floats: return fmt::format("[{}]", fmt::join(a.as<std::vector<double>>(), ", "));
    case K::FloatLists: return fmt::format("{}", a.as<std::vector<std::vector<double>>>());
    case K::Bool: return a.as<bool>() ? "True" : "False";
    case K::Bools: {
      std::vector<std::string> parts;
      for (bool b : a.as<std::vector<bool>>()) parts.push_back(b ? "True" : "False");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case K::String: return fmt::format("'{}'", a.as<std::string>());
    case K::Strings: return fmt::format("{}", a.as<std::vector<std::string>>());
    case K::Complex: return fmt::format("complex({}, {})", a.as<std::complex<double>>().real(), a.as<std::complex<double>>().imag());
    case K::SymInt: case K::SymFloat: case K::SymBool: return sym_text(g, a.as<SymArg>());
    case K::SymInts: case K::SymFloats: case K::SymBools: return syms(a.as<std::vector<SymArg>>());
    case K::ScalarType: return std::string(dtype_name(a.as<DType>()));
    case K::MemoryFormat: return std::string(memory_format_name(a.as<MemoryFormat>()));
    case K::Layout: return std::string(layout_name(a.as<Layout>()));
    case K::Device: return a.as<Device>().str();
    case K::Graph: return "{" + a.as<Subgraph>().name + "}";
    case K::Operator: return a.as<std::string>();
    case K::StringToArgument: {
      std::vector<std::string> parts;
      for (const NamedArgument& n : a.as<std::vector<NamedArgument>>()) parts.push_back(n.name + ": " + argument_text(g, n.arg));
      return fmt::format("{{{}}}", fmt::join(parts, ", "));
    }
  }
  return "?";
}

std::string to_graph_text(const Graph& g, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out;
  std::vector<std::string> inputs;
  for (ValueId v : g.input_values()) inputs.push_back(value_decl(g, v));
  out += fmt::format("{}graph({}):\n", pad, fmt::join(inputs, ", "));
  for (const Node& n : g.nodes()) {
    std::vector<std::string> outs, args;
    for (ValueId v : n.output_values()) outs.push_back(value_decl(g, v));
    for (const NamedArgument& in : n.inputs)
      args.push_back(in.keyword ? in.name + "=" + argument_text(g, in.arg) : argument_text(g, in.arg));
    out += fmt::format("{}  {} = {}({})\n", pad, outs.empty() ? "()" : fmt::format("{}", fmt::join(outs, ", ")),
                       short_target(n.target), fmt::join(args, ", "));
    for (const Subgraph* s : n.subgraphs()) {
      out += fmt::format("{}    {{{}}}:\n", pad, s->name);
      out += to_graph_text(*s->graph, indent + 6);
    }
  }
  std::vector<std::string> outputs;
  for (const Argument& a : g.outputs()) outputs.push_back(argument_text(g, a));
  out += fmt::format("{}  return ({})\n", pad, fmt::join(outputs, ", "));
  return out;
}

}  // namespace pt2diff
