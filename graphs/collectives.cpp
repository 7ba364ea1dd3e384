// graphs/collectives.cpp — functional collectives read off a graph's nodes, and the graph cut at them
// (collectives.h).
#include "graphs/collectives.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "pt2diff/error.h"

namespace pt2diff {

namespace {

constexpr std::string_view kPrefix = "torch.ops._c10d_functional.";

/// "all_reduce" of "torch.ops._c10d_functional.all_reduce.default".
std::string op_name(std::string_view target) {
  std::string rest(target.substr(kPrefix.size()));
  const size_t dot = rest.find('.');
  return dot == std::string::npos ? rest : rest.substr(0, dot);
}

const Argument* arg(const Node& node, std::string_view name, size_t position) {
  if (const NamedArgument* a = node.input(name)) return &a->arg;
  return position < node.inputs.size() && node.inputs[position].name.empty() ? &node.inputs[position].arg : nullptr;
}

std::optional<std::string> string_arg(const Node& node, std::string_view name, size_t position) {
  const Argument* a = arg(node, name, position);
  if (!a || a->kind != Argument::Kind::String) return std::nullopt;
  return a->as<std::string>();
}

std::optional<int64_t> int_arg(const Node& node, std::string_view name, size_t position) {
  const Argument* a = arg(node, name, position);
  if (!a) return std::nullopt;
  if (a->kind == Argument::Kind::Int) return a->as<int64_t>();
  if (a->kind == Argument::Kind::SymInt && a->as<SymArg>().is_literal()) return std::get<int64_t>(a->as<SymArg>().literal);
  return std::nullopt;
}

/// A list of sizes given as literals; nullopt when one is symbolic or the argument is of another kind.
std::optional<std::vector<int64_t>> ints_arg(const Node& node, std::string_view name, size_t position) {
  const Argument* a = arg(node, name, position);
  if (!a) return std::nullopt;
  if (a->kind == Argument::Kind::Ints) return a->as<std::vector<int64_t>>();
  if (a->kind != Argument::Kind::SymInts) return std::nullopt;
  std::vector<int64_t> out;
  for (const SymArg& s : a->as<std::vector<SymArg>>()) {
    if (!s.is_literal()) return std::nullopt;
    out.push_back(std::get<int64_t>(s.literal));
  }
  return out;
}

}  // namespace

const char* collective_op_name(CollectiveCall::Op op) {
  switch (op) {
    case CollectiveCall::Op::AllReduce: return "all_reduce";
    case CollectiveCall::Op::AllGather: return "all_gather_into_tensor";
    case CollectiveCall::Op::ReduceScatter: return "reduce_scatter_tensor";
    case CollectiveCall::Op::AllToAll: return "all_to_all_single";
    case CollectiveCall::Op::Broadcast: return "broadcast";
    case CollectiveCall::Op::Wait: return "wait_tensor";
  }
  return "?";
}

bool is_collective_target(std::string_view target) { return target.substr(0, kPrefix.size()) == kPrefix; }

std::optional<CollectiveCall> collective_call(const Node& node, std::string& why) {
  if (!is_collective_target(node.target)) {
    why = "not a functional collective";
    return std::nullopt;
  }
  CollectiveCall c;
  c.node = node.id;
  c.name = node.name;
  c.target = node.target;
  const std::string op = op_name(node.target);
  const Argument* tensor = arg(node, op == "wait_tensor" ? "tensor" : "input", 0);
  if (!tensor || tensor->kind != Argument::Kind::Tensor) {
    why = fmt::format("_c10d_functional.{} without a tensor argument", op);
    return std::nullopt;
  }
  c.input = tensor->as<ValueId>();
  auto group = [&](size_t position) {
    auto g = string_arg(node, "group_name", position);
    if (g) c.group = *g;
    return g.has_value();
  };
  bool ok = false;
  if (op == "wait_tensor") {
    c.op = CollectiveCall::Op::Wait;
    ok = true;
  } else if (op == "all_reduce") {
    c.op = CollectiveCall::Op::AllReduce;
    auto r = string_arg(node, "reduce_op", 1);
    ok = r && group(2);
    if (r) c.reduce = *r;
  } else if (op == "all_gather_into_tensor") {
    c.op = CollectiveCall::Op::AllGather;
    c.group_size = int_arg(node, "group_size", 1).value_or(-1);
    ok = group(2);
  } else if (op == "reduce_scatter_tensor") {
    c.op = CollectiveCall::Op::ReduceScatter;
    auto r = string_arg(node, "reduce_op", 1);
    if (r) c.reduce = *r;
    c.group_size = int_arg(node, "group_size", 2).value_or(-1);
    ok = r && group(3);
  } else if (op == "broadcast") {
    c.op = CollectiveCall::Op::Broadcast;
    c.src = int_arg(node, "src", 1).value_or(-1);
    ok = c.src >= 0 && group(2);
  } else if (op == "all_to_all_single") {
    c.op = CollectiveCall::Op::AllToAll;
    auto out = ints_arg(node, "output_split_sizes", 1), in = ints_arg(node, "input_split_sizes", 2);
    ok = out && in && group(3);
    if (ok) c.output_split_sizes = *out, c.input_split_sizes = *in;
  } else {
    why = fmt::format("_c10d_functional.{}: pt2diff simulates all_reduce, all_gather_into_tensor, reduce_scatter_tensor, "
                      "all_to_all_single, broadcast and wait_tensor", op);
    return std::nullopt;
  }
  if (!ok) {
    why = fmt::format("_c10d_functional.{} with arguments pt2diff cannot read (symbolic split sizes, or another schema)", op);
    return std::nullopt;
  }
  return c;
}

std::vector<CollectiveCall> collective_calls(const Graph& graph) {
  std::vector<CollectiveCall> out;
  for (const Node& n : graph.nodes()) {
    if (!is_collective_target(n.target)) continue;
    std::string why;
    auto c = collective_call(n, why);
    if (!c) throw Error(Error::Kind::Unsupported, fmt::format("node '{}' ({}): {}", n.name, n.target, why));
    out.push_back(std::move(*c));
  }
  return out;
}

CutGraph cut_at_collectives(const ExportedGraph& in) {
  CutGraph cut;
  const Graph& g = in.graph;
  std::set<ValueId> made_by_removed;
  for (const Node& n : g.nodes())
    if (is_collective_target(n.target)) {
      cut.removed.push_back(n.name);
      for (ValueId v : n.output_values()) made_by_removed.insert(v);
    }
  // Read by a kept node or an output: fed.
  std::set<ValueId> read;
  for (const Node& n : g.nodes())
    if (!is_collective_target(n.target))
      for (ValueId v : n.input_values()) read.insert(v);
  for (ValueId v : g.output_values()) read.insert(v);
  std::vector<ValueId> fed;
  for (ValueId v : made_by_removed)
    if (read.count(v)) fed.push_back(v);
  std::sort(fed.begin(), fed.end());  // values are numbered in graph order

  ExportedGraph& out = cut.graph;
  out = in;  // the signature, ranges and versions; the graph is built again below
  out.graph = Graph();
  Graph& ng = out.graph;
  for (const Value& v : g.values()) {  // the same ids, so arguments copy as they are
    ng.add_value(v.name, v.kind, v.meta);
    ng.mutable_value(v.id).sym_hint = v.sym_hint;
  }
  for (const Argument& a : g.inputs()) ng.add_input(a);
  for (ValueId v : fed) {
    Argument a;
    a.kind = Argument::Kind::Tensor;
    a.payload = v;
    ng.add_input(a);
    InputSpec spec;
    spec.kind = InputSpec::Kind::UserInput;
    spec.arg = a;
    out.input_specs.push_back(spec);
    if (!out.forward_arg_names.empty()) out.forward_arg_names.push_back(g.value(v).name);
    cut.fed.push_back(g.value(v).name);
  }
  for (const Node& n : g.nodes())
    if (!is_collective_target(n.target)) ng.add_node(n);
  for (const Argument& a : g.outputs()) ng.add_output(a);
  ng.finalize();
  return cut;
}

}  // namespace pt2diff
