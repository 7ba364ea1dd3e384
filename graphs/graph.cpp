// graphs/graph.cpp — the IR's invariants (finalize) and its small vocabulary helpers.
#include "pt2diff/graph.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pt2diff/error.h"

namespace pt2diff {

std::optional<DType> dtype_from_export(int64_t n) {
  // torch/_export/serde/schema.py ScalarType → c10::ScalarType (see shared notes); 0 is UNKNOWN.
  switch (n) {
    case 1: return DType::Byte;
    case 2: return DType::Char;
    case 3: return DType::Short;
    case 4: return DType::Int;
    case 5: return DType::Long;
    case 6: return DType::Half;
    case 7: return DType::Float;
    case 8: return DType::Double;
    case 9: return DType::ComplexHalf;
    case 10: return DType::ComplexFloat;
    case 11: return DType::ComplexDouble;
    case 12: return DType::Bool;
    case 13: return DType::BFloat16;
    case 28: return DType::UInt16;
    case 29: return DType::Float8_e4m3fn;
    case 30: return DType::Float8_e5m2;
    case 31: return DType::Float8_e4m3fnuz;
    case 32: return DType::Float8_e5m2fnuz;
    case 33: return DType::Float8_e8m0fnu;
    case 34: return DType::UInt32;
    case 35: return DType::UInt64;
    default: return std::nullopt;
  }
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::Undefined: return "undefined";
    case DType::Byte: return "uint8";
    case DType::Char: return "int8";
    case DType::Short: return "int16";
    case DType::Int: return "int32";
    case DType::Long: return "int64";
    case DType::Half: return "float16";
    case DType::Float: return "float32";
    case DType::Double: return "float64";
    case DType::ComplexHalf: return "complex32";
    case DType::ComplexFloat: return "complex64";
    case DType::ComplexDouble: return "complex128";
    case DType::Bool: return "bool";
    case DType::BFloat16: return "bfloat16";
    case DType::Float8_e5m2: return "float8_e5m2";
    case DType::Float8_e4m3fn: return "float8_e4m3fn";
    case DType::Float8_e5m2fnuz: return "float8_e5m2fnuz";
    case DType::Float8_e4m3fnuz: return "float8_e4m3fnuz";
    case DType::UInt16: return "uint16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Float8_e8m0fnu: return "float8_e8m0fnu";
  }
  return "unknown";
}

int64_t element_size(DType d) {
  switch (d) {
    case DType::Undefined: return 0;
    case DType::Byte: case DType::Char: case DType::Bool:
    case DType::Float8_e5m2: case DType::Float8_e4m3fn: case DType::Float8_e5m2fnuz:
    case DType::Float8_e4m3fnuz: case DType::Float8_e8m0fnu: return 1;
    case DType::Short: case DType::Half: case DType::BFloat16: case DType::UInt16: return 2;
    case DType::Int: case DType::Float: case DType::UInt32: case DType::ComplexHalf: return 4;
    case DType::Long: case DType::Double: case DType::UInt64: case DType::ComplexFloat: return 8;
    case DType::ComplexDouble: return 16;
  }
  return 0;
}

bool is_float8(DType d) {
  return d == DType::Float8_e5m2 || d == DType::Float8_e4m3fn || d == DType::Float8_e5m2fnuz ||
         d == DType::Float8_e4m3fnuz || d == DType::Float8_e8m0fnu;
}
bool is_floating(DType d) {
  return d == DType::Half || d == DType::BFloat16 || d == DType::Float || d == DType::Double || is_float8(d);
}
bool is_complex(DType d) {
  return d == DType::ComplexHalf || d == DType::ComplexFloat || d == DType::ComplexDouble;
}

std::string_view layout_name(Layout l) {
  static constexpr std::string_view names[] = {"unknown", "sparse_coo", "sparse_csr", "sparse_csc",
                                               "sparse_bsr", "sparse_bsc", "mkldnn", "strided"};
  return names[static_cast<int>(l)];
}
std::string_view memory_format_name(MemoryFormat f) {
  static constexpr std::string_view names[] = {"unknown", "contiguous_format", "channels_last",
                                               "channels_last_3d", "preserve_format"};
  return names[static_cast<int>(f)];
}

std::string Device::str() const { return index < 0 ? type : fmt::format("{}:{}", type, index); }

Device parse_device(const std::string& text) {
  Device d;
  const size_t colon = text.find(':');
  d.type = text.substr(0, colon);
  const bool known = d.type == "cpu" || d.type == "cuda" || d.type == "meta";
  bool index_ok = colon == std::string::npos;
  if (!index_ok && colon + 1 < text.size() && text.size() - colon <= 4 &&
      text.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    d.index = std::stoll(text.substr(colon + 1));
    index_ok = d.type != "cpu" || d.index == 0;
  }
  if (!known || !index_ok)
    throw Error(Error::Kind::Usage, fmt::format("'{}' is not a device: use cpu, cuda or cuda:N", text));
  return d;
}

std::string SymInt::str() const { return value ? std::to_string(*value) : expr; }

bool TensorMeta::is_dynamic() const {
  auto dyn = [](const SymInt& s) { return !s.is_static(); };
  return std::any_of(sizes.begin(), sizes.end(), dyn);
}

std::optional<int64_t> TensorMeta::numel() const {
  int64_t n = 1;
  for (const SymInt& s : sizes) {
    auto v = s.concrete();
    if (!v) return std::nullopt;
    n *= *v;
  }
  return n;
}

std::string TensorMeta::shape_str() const {
  std::vector<std::string> parts;
  for (const SymInt& s : sizes) parts.push_back(s.str());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string_view value_kind_name(ValueKind k) {
  static constexpr std::string_view names[] = {"tensor", "sym_int", "sym_float", "sym_bool", "token", "custom_obj"};
  return names[static_cast<int>(k)];
}

std::string_view argument_kind_name(Argument::Kind k) {
  static constexpr std::string_view names[] = {
      "none", "tensor", "tensors", "optional_tensor", "optional_tensors", "nested_tensors",
      "int", "ints", "int_lists", "float", "floats", "float_lists", "bool", "bools", "string", "strings",
      "complex", "sym_int", "sym_ints", "sym_float", "sym_floats", "sym_bool", "sym_bools",
      "scalar_type", "memory_format", "layout", "device", "graph", "custom_obj", "operator",
      "string_to_argument"};
  return names[static_cast<int>(k)];
}

std::vector<ValueId> Argument::tensor_values() const {
  std::vector<ValueId> out;
  switch (kind) {
    case Kind::Tensor:
    case Kind::OptionalTensor:
      if (as<ValueId>() != kNoValue) out.push_back(as<ValueId>());
      break;
    case Kind::Tensors:
    case Kind::OptionalTensors:
      for (ValueId v : as<std::vector<ValueId>>())
        if (v != kNoValue) out.push_back(v);
      break;
    case Kind::NestedTensors:
      for (const auto& list : as<std::vector<std::vector<ValueId>>>()) out.insert(out.end(), list.begin(), list.end());
      break;
    case Kind::StringToArgument:
      for (const NamedArgument& a : as<std::vector<NamedArgument>>()) {
        auto inner = a.arg.tensor_values();
        out.insert(out.end(), inner.begin(), inner.end());
      }
      break;
    default:
      break;
  }
  return out;
}

std::vector<ValueId> Argument::values() const {
  std::vector<ValueId> out = tensor_values();
  switch (kind) {
    case Kind::CustomObj:
      out.push_back(as<ValueId>());
      break;
    case Kind::SymInt:
    case Kind::SymFloat:
    case Kind::SymBool:
      if (!as<SymArg>().is_literal()) out.push_back(as<SymArg>().value);
      break;
    case Kind::SymInts:
    case Kind::SymFloats:
    case Kind::SymBools:
      for (const SymArg& s : as<std::vector<SymArg>>())
        if (!s.is_literal()) out.push_back(s.value);
      break;
    case Kind::StringToArgument:
      for (const NamedArgument& a : as<std::vector<NamedArgument>>()) {
        for (ValueId v : a.arg.values())
          if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      }
      break;
    default:
      break;
  }
  return out;
}

namespace {
void append_unique(std::vector<ValueId>& out, const std::vector<ValueId>& more) {
  for (ValueId v : more)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
}
}  // namespace

std::vector<ValueId> Node::input_values() const {
  std::vector<ValueId> out;
  for (const NamedArgument& in : inputs) append_unique(out, in.arg.values());
  return out;
}

std::vector<ValueId> Node::output_values() const {
  std::vector<ValueId> out;
  for (const Argument& a : outputs) append_unique(out, a.values());
  return out;
}

const NamedArgument* Node::input(std::string_view name) const {
  for (const NamedArgument& a : inputs)
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<const Subgraph*> Node::subgraphs() const {
  std::vector<const Subgraph*> out;
  for (const NamedArgument& in : inputs)
    if (in.arg.kind == Argument::Kind::Graph) out.push_back(&in.arg.as<Subgraph>());
  return out;
}

std::optional<AutocastRegion> autocast_region(const Node& node, std::string& why) {
  if (node.target != "torch.ops.higher_order.wrap_with_autocast") {
    why = "not a wrap_with_autocast node";
    return std::nullopt;
  }
  using K = Argument::Kind;
  const auto& in = node.inputs;
  auto kind = [&](size_t i) { return i < in.size() ? in[i].arg.kind : K::None; };
  if (in.size() < 5 || kind(0) != K::String || (kind(1) != K::ScalarType && kind(1) != K::None) || kind(2) != K::Bool ||
      (kind(3) != K::Bool && kind(3) != K::None) || kind(4) != K::Graph) {
    why = "wrap_with_autocast without (device_type, dtype, enabled, cache_enabled, body, operands...) arguments";
    return std::nullopt;
  }
  AutocastRegion r;
  r.node = node.name;
  r.device_type = in[0].arg.as<std::string>();
  // torch.autocast's defaults: bfloat16 on the CPU, float16 on GPUs.
  r.dtype_value = kind(1) == K::ScalarType ? in[1].arg.as<DType>() : (r.device_type == "cpu" ? DType::BFloat16 : DType::Half);
  r.dtype = std::string(dtype_name(r.dtype_value));
  r.enabled = in[2].arg.as<bool>();
  r.cache_enabled = kind(3) == K::Bool ? in[3].arg.as<bool>() : true;
  for (const Node& n : in[4].arg.as<Subgraph>().graph->nodes()) r.body_nodes.push_back(n.name);
  return r;
}

namespace {
void collect_autocast(const Graph& g, int depth, std::vector<AutocastRegion>& out) {
  for (const Node& n : g.nodes()) {
    std::string why;
    if (auto r = autocast_region(n, why)) {
      r->depth = depth;
      out.push_back(std::move(*r));
    }
    for (const Subgraph* s : n.subgraphs()) collect_autocast(*s->graph, depth + 1, out);
  }
}
}  // namespace

std::vector<AutocastRegion> autocast_regions(const Graph& graph) {
  std::vector<AutocastRegion> out;
  collect_autocast(graph, 0, out);
  return out;
}

std::string autocast_summary(const AutocastRegion& r) {
  const size_t shown = std::min<size_t>(r.body_nodes.size(), 8);
  std::vector<std::string> names(r.body_nodes.begin(), r.body_nodes.begin() + static_cast<long>(shown));
  return fmt::format("{}{}: {}, {} node{}: {}{}", r.node, r.depth ? fmt::format(" (nested, depth {})", r.depth) : "",
                     r.enabled ? fmt::format("autocast {} {}", r.device_type, r.dtype) : "autocast off on " + r.device_type,
                     r.body_nodes.size(), r.body_nodes.size() == 1 ? "" : "s", fmt::join(names, ", "),
                     r.body_nodes.size() > shown ? ", ..." : "");
}

namespace {
/// Splits `File "x.py", line 3, in f\n    code` frames; returns (location, code) pairs.
std::vector<std::pair<std::string, std::string>> stack_frames(const std::string& trace) {
  std::vector<std::pair<std::string, std::string>> frames;
  size_t pos = 0;
  while ((pos = trace.find("File \"", pos)) != std::string::npos) {
    size_t end_path = trace.find('"', pos + 6);
    if (end_path == std::string::npos) break;
    std::string path = trace.substr(pos + 6, end_path - pos - 6);
    size_t eol = trace.find('\n', end_path);
    std::string rest = trace.substr(end_path + 1, eol == std::string::npos ? std::string::npos : eol - end_path - 1);
    std::string line, func;
    if (auto l = rest.find("line "); l != std::string::npos) {
      size_t e = rest.find(',', l);
      line = rest.substr(l + 5, e == std::string::npos ? std::string::npos : e - l - 5);
    }
    if (auto f = rest.find("in "); f != std::string::npos) func = rest.substr(f + 3);
    std::string code;
    if (eol != std::string::npos) {
      size_t next = trace.find('\n', eol + 1);
      code = trace.substr(eol + 1, next == std::string::npos ? std::string::npos : next - eol - 1);
      code.erase(0, code.find_first_not_of(' '));
      if (code.rfind("File \"", 0) == 0) code.clear();
    }
    std::string base = path.substr(path.find_last_of('/') + 1);
    std::string loc = fmt::format("{}:{} in {}", base, line, func);
    frames.emplace_back(path + "\n" + loc, code);
    pos = end_path;
  }
  return frames;
}
}  // namespace

std::string SourceInfo::user_frame() const {
  auto frames = stack_frames(stack_trace);
  if (frames.empty()) return {};
  // Prefer the innermost frame outside torch's own Python sources: that is the user's line.
  const std::pair<std::string, std::string>* chosen = &frames.back();
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const std::string path = it->first.substr(0, it->first.find('\n'));
    if (path.find("/torch/") == std::string::npos && path.find("site-packages/") == std::string::npos) {
      chosen = &*it;
      break;
    }
  }
  std::string loc = chosen->first.substr(chosen->first.find('\n') + 1);
  return chosen->second.empty() ? loc : loc + ": " + chosen->second;
}

std::string SourceInfo::origin() const {
  std::string frame = user_frame();
  if (backward_of.empty()) return frame;
  return frame.empty() ? "gradient of " + backward_of : fmt::format("gradient of {} at {}", backward_of, frame);
}

std::string SourceInfo::module_path() const {
  return nn_module_stack.empty() ? std::string() : nn_module_stack.back().path;
}

ValueId Graph::add_value(std::string name, ValueKind kind, std::optional<TensorMeta> meta) {
  if (by_name_.count(name))
    throw Error(Error::Kind::BadArchive, fmt::format("value '{}' is defined twice in the graph", name));
  Value v;
  v.id = static_cast<ValueId>(values_.size());
  v.name = std::move(name);
  v.kind = kind;
  v.meta = std::move(meta);
  by_name_.emplace(v.name, v.id);
  values_.push_back(std::move(v));
  return values_.back().id;
}

ValueId Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoValue : it->second;
}

NodeId Graph::add_node(Node node) {
  node.id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

std::vector<ValueId> Graph::input_values() const {
  std::vector<ValueId> out;
  for (const Argument& a : inputs_) append_unique(out, a.values());
  return out;
}

std::vector<ValueId> Graph::output_values() const {
  std::vector<ValueId> out;
  for (const Argument& a : outputs_) append_unique(out, a.values());
  return out;
}

void Graph::finalize() {
  std::vector<char> defined(values_.size(), 0);
  for (Value& v : values_) {
    v.producer = kGraphInput;
    v.users.clear();
    v.is_graph_output = false;
  }
  for (ValueId v : input_values()) defined[static_cast<size_t>(v)] = 1;
  for (const Node& n : nodes_) {
    for (ValueId v : n.input_values()) {
      if (!defined[static_cast<size_t>(v)])
        throw Error(Error::Kind::BadArchive,
                    fmt::format("node '{}' ({}) uses '{}' before it is defined: the graph is not in topological order",
                                n.name, n.target, values_[static_cast<size_t>(v)].name));
      auto& users = values_[static_cast<size_t>(v)].users;
      if (users.empty() || users.back() != n.id) users.push_back(n.id);
    }
    for (ValueId v : n.output_values()) {
      if (defined[static_cast<size_t>(v)])
        throw Error(Error::Kind::BadArchive,
                    fmt::format("node '{}' ({}) redefines '{}'", n.name, n.target, values_[static_cast<size_t>(v)].name));
      defined[static_cast<size_t>(v)] = 1;
      values_[static_cast<size_t>(v)].producer = n.id;
    }
  }
  for (ValueId v : output_values()) {
    if (!defined[static_cast<size_t>(v)])
      throw Error(Error::Kind::BadArchive,
                  fmt::format("graph output '{}' is never defined", values_[static_cast<size_t>(v)].name));
    values_[static_cast<size_t>(v)].is_graph_output = true;
  }
}

std::string constant_str(const ConstantValue& c) {
  struct {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
    std::string operator()(const std::string& v) const { return fmt::format("'{}'", v); }
  } visit;
  return std::visit(visit, c);
}

std::string_view input_kind_name(InputSpec::Kind k) {
  static constexpr std::string_view names[] = {"user_input", "parameter", "buffer", "tensor_constant",
                                               "custom_obj", "token", "constant_input"};
  return names[static_cast<int>(k)];
}

std::string_view output_kind_name(OutputSpec::Kind k) {
  static constexpr std::string_view names[] = {"user_output", "loss_output", "buffer_mutation",
                                               "gradient_to_parameter", "gradient_to_user_input",
                                               "user_input_mutation", "token", "parameter_mutation"};
  return names[static_cast<int>(k)];
}

}  // namespace pt2diff
