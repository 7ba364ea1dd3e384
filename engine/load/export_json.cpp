// engine/load/export_json.cpp — the only file that includes PyTorch's generated schema header.
//
// The generated types do the JSON work; this file checks what they silently accept (another
// schema major, an Argument kind they do not know: they would leave an empty union) and turns
// them into the IR, resolving value names to ids.
#include "engine/load/export_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <torch/csrc/utils/generated_serialization_types.h>

#include "engine/load/torch_compat.h"

#include "engine/load/archive_error.h"
#include "pt2diff/error.h"

namespace pt2diff {
namespace ex = torch::_export;
using nlohmann::json;

namespace {


const std::set<std::string>& known_argument_kinds() {
  static const std::set<std::string> kinds = {
      "as_none", "as_tensor", "as_tensors", "as_int", "as_ints", "as_float", "as_floats", "as_string",
      "as_strings", "as_sym_int", "as_sym_ints", "as_scalar_type", "as_memory_format", "as_layout",
      "as_device", "as_bool", "as_bools", "as_sym_bool", "as_sym_bools", "as_graph", "as_optional_tensors",
      "as_custom_obj", "as_operator", "as_sym_float", "as_sym_floats", "as_optional_tensor", "as_complex",
      "as_nested_tensors", "as_int_lists", "as_string_to_argument", "as_float_lists"};
  return kinds;
}

/// Every Argument must be an object with exactly one known key: the generated parser would
/// otherwise leave an empty union and fail later without saying where.
void check_argument(const json& arg, const std::string& where) {
  if (!arg.is_object() || arg.size() != 1)
    bad_archive(where, fmt::format("malformed argument {} (expected one {{\"as_<kind>\": ...}} entry)", arg.dump().substr(0, 80)));
  const std::string& key = arg.begin().key();
  if (!known_argument_kinds().count(key))
    bad_archive(where, fmt::format("unknown argument kind '{}': the archive was written by a torch whose export schema "
                           "this pt2diff does not know; re-save it with torch 2.11-2.13", key));
}

void check_graph(const json& g, const std::string& where) {
  if (!g.is_object()) bad_archive(where, "graph is not a JSON object");
  for (const char* side : {"inputs", "outputs"}) {
    if (!g.contains(side)) continue;
    size_t i = 0;
    for (const json& a : g[side]) check_argument(a, fmt::format("{}: graph {} #{}", where, side, i++));
  }
  if (!g.contains("nodes")) return;
  for (const json& n : g["nodes"]) {
    std::string node = n.value("name", std::string("?"));
    std::string target = n.value("target", std::string("?"));
    std::string at = fmt::format("{}: node '{}' ({})", where, node, target);
    if (n.contains("inputs"))
      for (const json& in : n["inputs"]) {
        if (!in.contains("arg")) bad_archive(at, "an input has no 'arg'");
        const json& arg = in["arg"];
        check_argument(arg, fmt::format("{} input '{}'", at, in.value("name", std::string())));
        if (arg.contains("as_graph") && arg["as_graph"].contains("graph")) check_graph(arg["as_graph"]["graph"], at);
      }
    if (n.contains("outputs"))
      for (const json& out : n["outputs"]) check_argument(out, at + " output");
  }
}

/// expr_str is sympy's srepr ("Symbol('s77', positive=True, integer=True)"). Only the symbol
/// names are read, never evaluated: "Mul(Integer(2), Symbol('s77', ...))" → "Mul(2, s77)".
std::string readable_expr(const std::string& srepr) {
  static const std::regex symbol(R"(Symbol\('([^']*)'[^)]*\))"), integer(R"(Integer\((-?[0-9]+)\))");
  return std::regex_replace(std::regex_replace(srepr, symbol, "$1"), integer, "$1");
}

SymInt to_sym_int(const ex::SymInt& s) {
  SymInt out;
  if (s.tag() == ex::SymInt::Tag::AS_INT) {
    out.value = s.get_as_int();
  } else {
    const ex::SymExpr& e = s.get_as_expr();
    out.expr = readable_expr(e.get_expr_str());
    if (e.get_hint() && e.get_hint()->tag() == ex::SymExprHint::Tag::AS_INT) out.hint = e.get_hint()->get_as_int();
  }
  return out;
}

Device to_device(const ex::Device& d) {
  return Device{d.get_type(), d.get_index().value_or(-1)};
}

DType to_dtype(int64_t n, const std::string& where) {
  auto d = dtype_from_export(n);
  if (!d) bad_archive(where, fmt::format("unknown scalar type number {} (not in schema major {})", n, kSchemaMajor));
  return *d;
}

TensorMeta to_meta(const ex::TensorMeta& m, const std::string& where) {
  TensorMeta out;
  out.dtype = to_dtype(static_cast<int64_t>(m.get_dtype()), where);
  for (const auto& s : m.get_sizes()) out.sizes.push_back(to_sym_int(s));
  for (const auto& s : m.get_strides()) out.strides.push_back(to_sym_int(s));
  out.storage_offset = to_sym_int(m.get_storage_offset());
  out.device = to_device(m.get_device());
  int64_t layout = static_cast<int64_t>(m.get_layout());
  if (layout < 0 || layout > static_cast<int64_t>(Layout::Strided)) bad_archive(where, fmt::format("unknown layout {}", layout));
  out.layout = static_cast<Layout>(layout);
  out.requires_grad = m.get_requires_grad();
  return out;
}

std::vector<ModuleFrame> parse_module_stack(const std::string& text) {
  // Written by torch/_export/serde/serialize.py as "key,path,type;key,path,type".
  std::vector<ModuleFrame> frames;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(';', start);
    std::string entry = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t first = entry.find(','), last = entry.rfind(',');
    if (first != std::string::npos && last != first)
      frames.push_back({entry.substr(0, first), entry.substr(first + 1, last - first - 1), entry.substr(last + 1)});
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return frames;
}

/// Converts one (sub)graph, owning its own value namespace.
class GraphBuilder {
 public:
  GraphBuilder(const ex::Graph& g, const std::unordered_map<std::string, ex::TensorMeta>* outer_meta, std::string where)
      : src_(g), outer_meta_(outer_meta), where_(std::move(where)) {}

  std::shared_ptr<Graph> build() {
    auto graph = std::make_shared<Graph>();
    graph_ = graph.get();
    for (const auto& a : src_.get_inputs()) graph_->add_input(argument(a, where_ + ": graph input"));
    for (const ex::Node& n : src_.get_nodes()) graph_->add_node(node(n));
    for (const auto& a : src_.get_outputs()) graph_->add_output(argument(a, where_ + ": graph output"));
    try {
      graph_->finalize();
    } catch (const Error& e) {
      bad_archive(where_, e.what());
    }
    return graph;
  }

  ValueId value(const std::string& name, ValueKind kind, const std::string& where) {
    if (ValueId id = graph_->find(name); id != kNoValue) return id;
    std::optional<TensorMeta> meta;
    if (kind == ValueKind::Tensor) {
      const auto& local = src_.get_tensor_values();
      auto it = local.find(name);
      if (it != local.end()) {
        meta = to_meta(it->second, where + " tensor '" + name + "'");
      } else if (outer_meta_) {
        auto outer = outer_meta_->find(name);
        if (outer != outer_meta_->end()) meta = to_meta(outer->second, where + " tensor '" + name + "'");
      }
    }
    ValueId id = graph_->add_value(name, kind, std::move(meta));
    graph_->mutable_value(id).sym_hint = sym_hint(name, kind);
    return id;
  }

  /// The example-time value of a symbolic scalar, from the graph's sym_*_values tables.
  std::optional<double> sym_hint(const std::string& name, ValueKind kind) const {
    auto hint_of = [](const ex::SymExpr& e) -> std::optional<double> {
      if (!e.get_hint()) return std::nullopt;
      const ex::SymExprHint& h = *e.get_hint();
      switch (h.tag()) {
        case ex::SymExprHint::Tag::AS_INT: return static_cast<double>(h.get_as_int());
        case ex::SymExprHint::Tag::AS_FLOAT: return h.get_as_float().get();
        case ex::SymExprHint::Tag::AS_BOOL: return h.get_as_bool() ? 1.0 : 0.0;
      }
      return std::nullopt;
    };
    if (kind == ValueKind::SymInt) {
      auto it = src_.get_sym_int_values().find(name);
      if (it == src_.get_sym_int_values().end()) return std::nullopt;
      if (it->second.tag() == ex::SymInt::Tag::AS_INT) return static_cast<double>(it->second.get_as_int());
      return hint_of(it->second.get_as_expr());
    }
    if (kind == ValueKind::SymFloat) {
      auto it = src_.get_sym_float_values().find(name);
      if (it == src_.get_sym_float_values().end()) return std::nullopt;
      if (it->second.tag() == ex::SymFloat::Tag::AS_FLOAT) return it->second.get_as_float().get();
      return hint_of(it->second.get_as_expr());
    }
    if (kind == ValueKind::SymBool) {
      auto it = src_.get_sym_bool_values().find(name);
      if (it == src_.get_sym_bool_values().end()) return std::nullopt;
      if (it->second.tag() == ex::SymBool::Tag::AS_BOOL) return it->second.get_as_bool() ? 1.0 : 0.0;
      return hint_of(it->second.get_as_expr());
    }
    return std::nullopt;
  }

  SymArg sym_arg(const ex::SymIntArgument& s, const std::string& where) {
    if (s.tag() == ex::SymIntArgument::Tag::AS_NAME) return SymArg{value(s.get_as_name(), ValueKind::SymInt, where), int64_t{0}};
    return SymArg{kNoValue, s.get_as_int()};
  }
  SymArg sym_arg(const ex::SymFloatArgument& s, const std::string& where) {
    if (s.tag() == ex::SymFloatArgument::Tag::AS_NAME) return SymArg{value(s.get_as_name(), ValueKind::SymFloat, where), 0.0};
    return SymArg{kNoValue, s.get_as_float().get()};
  }
  SymArg sym_arg(const ex::SymBoolArgument& s, const std::string& where) {
    if (s.tag() == ex::SymBoolArgument::Tag::AS_NAME) return SymArg{value(s.get_as_name(), ValueKind::SymBool, where), false};
    return SymArg{kNoValue, s.get_as_bool()};
  }
  template <class T>
  std::vector<SymArg> sym_args(const std::vector<T>& list, const std::string& where) {
    std::vector<SymArg> out;
    for (const auto& s : list) out.push_back(sym_arg(s, where));
    return out;
  }

  static std::vector<double> floats(const std::vector<ex::F64>& list) {
    std::vector<double> out;
    for (const auto& f : list) out.push_back(f.get());
    return out;
  }

  /// `v` as the enum E, whose last value is `last`; an archive error naming `what` when out of range.
  template <typename E>
  static E checked_enum(int64_t v, E last, const char* what, const std::string& where) {
    if (v < 0 || v > static_cast<int64_t>(last)) bad_archive(where, fmt::format("unknown {} {}", what, v));
    return static_cast<E>(v);
  }

  /// A graph argument (a higher-order op's branch or body), built as a graph of its own.
  Subgraph subgraph(const ex::GraphArgument& g, const std::string& where) {
    GraphBuilder sub(*g.get_graph(), &src_.get_tensor_values(), where + " subgraph '" + g.get_name() + "'");
    return Subgraph{g.get_name(), sub.build()};
  }

  Argument argument(const ex::Argument& a, const std::string& where) {
    using T = ex::Argument::Tag;
    using K = Argument::Kind;
    Argument out;
    auto tensors = [&](const std::vector<ex::TensorArgument>& list) {
      std::vector<ValueId> ids;
      for (const auto& t : list) ids.push_back(value(t.get_name(), ValueKind::Tensor, where));
      return ids;
    };
    auto optional_tensor = [&](const ex::OptionalTensorArgument& t) {
      return t.tag() == ex::OptionalTensorArgument::Tag::AS_TENSOR ? value(t.get_as_tensor().get_name(), ValueKind::Tensor, where)
                                                                  : kNoValue;
    };
    switch (a.tag()) {
      case T::AS_NONE: out.kind = K::None; break;
      case T::AS_TENSOR: out = {K::Tensor, value(a.get_as_tensor().get_name(), ValueKind::Tensor, where)}; break;
      case T::AS_TENSORS: out = {K::Tensors, tensors(a.get_as_tensors())}; break;
      case T::AS_OPTIONAL_TENSOR: out = {K::OptionalTensor, optional_tensor(a.get_as_optional_tensor())}; break;
      case T::AS_OPTIONAL_TENSORS: {
        std::vector<ValueId> ids;
        for (const auto& t : a.get_as_optional_tensors()) ids.push_back(optional_tensor(t));
        out = {K::OptionalTensors, std::move(ids)};
        break;
      }
      case T::AS_NESTED_TENSORS: {
        std::vector<std::vector<ValueId>> lists;
        for (const auto& l : a.get_as_nested_tensors()) lists.push_back(tensors(l));
        out = {K::NestedTensors, std::move(lists)};
        break;
      }
      case T::AS_INT: out = {K::Int, a.get_as_int()}; break;
      case T::AS_INTS: out = {K::Ints, a.get_as_ints()}; break;
      case T::AS_INT_LISTS: out = {K::IntLists, a.get_as_int_lists()}; break;
      case T::AS_FLOAT: out = {K::Float, a.get_as_float().get()}; break;
      case T::AS_FLOATS: out = {K::Floats, floats(a.get_as_floats())}; break;
#if PT2DIFF_SCHEMA_HAS_FLOAT_LISTS
      case T::AS_FLOAT_LISTS: {
        std::vector<std::vector<double>> lists;
        for (const auto& l : a.get_as_float_lists()) lists.push_back(floats(l));
        out = {K::FloatLists, std::move(lists)};
        break;
      }
#endif
      case T::AS_BOOL: out = {K::Bool, a.get_as_bool()}; break;
      case T::AS_BOOLS: out = {K::Bools, a.get_as_bools()}; break;
      case T::AS_STRING: out = {K::String, a.get_as_string()}; break;
      case T::AS_STRINGS: out = {K::Strings, a.get_as_strings()}; break;
      case T::AS_COMPLEX:
        out = {K::Complex, std::complex<double>(a.get_as_complex().get_real().get(), a.get_as_complex().get_imag().get())};
        break;
      case T::AS_SYM_INT: out = {K::SymInt, sym_arg(a.get_as_sym_int(), where)}; break;
      case T::AS_SYM_INTS: out = {K::SymInts, sym_args(a.get_as_sym_ints(), where)}; break;
      case T::AS_SYM_FLOAT: out = {K::SymFloat, sym_arg(a.get_as_sym_float(), where)}; break;
      case T::AS_SYM_FLOATS: out = {K::SymFloats, sym_args(a.get_as_sym_floats(), where)}; break;
      case T::AS_SYM_BOOL: out = {K::SymBool, sym_arg(a.get_as_sym_bool(), where)}; break;
      case T::AS_SYM_BOOLS: out = {K::SymBools, sym_args(a.get_as_sym_bools(), where)}; break;
      case T::AS_SCALAR_TYPE: out = {K::ScalarType, to_dtype(static_cast<int64_t>(a.get_as_scalar_type()), where)}; break;
      case T::AS_MEMORY_FORMAT:
        out = {K::MemoryFormat, checked_enum<MemoryFormat>(static_cast<int64_t>(a.get_as_memory_format()), MemoryFormat::Preserve,
                                                           "memory format", where)};
        break;
      case T::AS_LAYOUT:
        out = {K::Layout, checked_enum<Layout>(static_cast<int64_t>(a.get_as_layout()), Layout::Strided, "layout", where)};
        break;
      case T::AS_DEVICE: out = {K::Device, to_device(a.get_as_device())}; break;
      case T::AS_GRAPH: out = {K::Graph, subgraph(a.get_as_graph(), where)}; break;
      case T::AS_CUSTOM_OBJ: out = {K::CustomObj, value(a.get_as_custom_obj().get_name(), ValueKind::CustomObj, where)}; break;
      case T::AS_OPERATOR: out = {K::Operator, a.get_as_operator()}; break;
      case T::AS_STRING_TO_ARGUMENT: {
        std::vector<NamedArgument> named;
        for (const auto& [key, arg] : a.get_as_string_to_argument()) named.push_back({key, argument(*arg, where + "." + key), true});
        std::sort(named.begin(), named.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
        out = {K::StringToArgument, std::move(named)};
        break;
      }
    }
    return out;
  }

  /// The forward node a training step's backward node is the gradient of: "backward_of" in the node's custom
  /// metadata (a JSON object pt2diff_capture writes), "" when absent or not a string.
  static std::string backward_of(const std::string& custom) {
    json j = json::parse(custom, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("backward_of") || !j["backward_of"].is_string()) return {};
    return j["backward_of"].get<std::string>();
  }

  Node node(const ex::Node& n) {
    Node out;
    out.name = n.get_name().value_or("");
    out.target = n.get_target();
    std::string where = fmt::format("{}: node '{}' ({})", where_, out.name, out.target);
    for (const ex::NamedArgument& in : n.get_inputs())
      out.inputs.push_back({in.get_name(), argument(in.get_arg(), where + " input '" + in.get_name() + "'"),
                            in.get_kind().value_or(1) == 2});
    for (const ex::Argument& o : n.get_outputs()) out.outputs.push_back(argument(o, where + " output"));
    for (const auto& [key, text] : n.get_metadata()) {
      if (key == "stack_trace") out.source.stack_trace = text;
      else if (key == "nn_module_stack") out.source.nn_module_stack = parse_module_stack(text);
      else if (key == "torch_fn") out.source.torch_fn = text;
      else out.metadata.emplace(key, text);
      if (key == "custom") out.source.backward_of = backward_of(text);
    }
    out.is_hop_single_tensor_return = n.get_is_hop_single_tensor_return().value_or(false);
    return out;
  }

 private:
  const ex::Graph& src_;
  const std::unordered_map<std::string, ex::TensorMeta>* outer_meta_;
  std::string where_;
  Graph* graph_ = nullptr;
};

ConstantValue to_constant(const ex::ConstantValue& c) {
  using T = ex::ConstantValue::Tag;
  switch (c.tag()) {
    case T::AS_NONE: return std::monostate{};
    case T::AS_INT: return c.get_as_int();
    case T::AS_FLOAT: return c.get_as_float().get();
    case T::AS_STRING: return c.get_as_string();
    case T::AS_BOOL: return c.get_as_bool();
  }
  return std::monostate{};
}

/// Every number pt2diff reads as an int64 is one: nlohmann converts 2^64 or 1e30 to int64 by wrapping
/// (a silent -2^63). Under these keys of the export schema every number must be an integer in range;
/// anywhere, an integer beyond int64 is refused.
void check_integers(const json& root, const std::string& where) {
  static const std::set<std::string> integer_keys = {"as_int", "as_ints", "as_int_lists", "dtype", "layout", "major", "minor",
                                                     "as_scalar_type", "as_memory_format", "as_layout", "index", "min_val", "max_val"};
  std::vector<std::pair<const json*, const std::string*>> todo = {{&root, nullptr}};  // value, the integer key above it
  while (!todo.empty()) {
    auto [v, key] = todo.back();
    todo.pop_back();
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      bad_archive(where, fmt::format("the integer {} (under '{}') is beyond int64: the archive is corrupt", v->dump(), key ? *key : "?"));
    if (key && v->is_number_float())
      bad_archive(where, fmt::format("'{}' holds {}, where the export schema has an integer: the archive is corrupt", *key, v->dump()));
    if (v->is_object()) {
      for (const auto& [k, item] : v->items()) {
        auto known = integer_keys.find(k);
        todo.emplace_back(&item, known != integer_keys.end() ? &*known : key);
      }
    } else if (v->is_array()) {
      for (const json& item : *v) todo.emplace_back(&item, key);
    }
  }
}

/// An archive using what the linked torch's schema lacks (engine/load/torch_compat.h) is refused by name,
/// not misread as "malformed".
void refuse_missing_schema_features(const json& graph_module, const std::string& where) {
  if (kMissingSchemaFeatures[0].key == nullptr) return;
  std::vector<const json*> todo = {&graph_module};
  while (!todo.empty()) {
    const json& v = *todo.back();
    todo.pop_back();
    if (v.is_object()) {
      for (const MissingSchemaFeature* f = kMissingSchemaFeatures; f->key; ++f)
        if (v.contains(f->key))
          bad_archive(where, fmt::format("the graph uses '{}', written by {}, which the torch {} pt2diff was built against cannot "
                                 "represent; rebuild pt2diff against a newer torch (scripts/setup.sh --python PATH) or "
                                 "re-export with this torch",
                                 f->key, f->written_by, PT2DIFF_LINKED_TORCH_VERSION));
      for (const auto& [key, item] : v.items())
        if (item.is_structured()) todo.push_back(&item);
    } else if (v.is_array()) {
      for (const json& item : v)
        if (item.is_structured()) todo.push_back(&item);
    }
  }
}

}  // namespace

namespace {

/// The archive's JSON, checked before it is read into the schema's types: parseable, an ExportedProgram of the
/// schema major this pt2diff reads, no feature it lacks, integers in range, a well-formed graph.
json checked_program_json(const std::string& json_text, const std::string& where) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    bad_archive(where, fmt::format("not valid JSON (byte {}): the archive is corrupt; re-save it with torch.export.save", e.byte));
  } catch (const json::exception& e) {  // a number past double's range ("11e308"): out_of_range 406
    bad_archive(where, fmt::format("unreadable JSON ({}): the archive is corrupt; re-save it with torch.export.save", e.what()));
  }
  if (!j.is_object() || !j.contains("graph_module"))
    bad_archive(where, "no 'graph_module': not an ExportedProgram written by torch.export.save");
  int64_t major = j.contains("schema_version") ? j["schema_version"].value("major", int64_t{-1}) : -1;
  if (major != kSchemaMajor)
    bad_archive(where, fmt::format("export schema major {} (this pt2diff reads major {}, written by torch 2.11-2.14); "
                           "re-save the program with a torch of that range",
                           major, kSchemaMajor));
  refuse_missing_schema_features(j["graph_module"], where);
  check_integers(j, where);
  try {
    check_graph(j["graph_module"].at("graph"), where);
  } catch (const json::exception& e) {
    bad_archive(where, fmt::format("malformed graph ({})", e.what()));
  }
  return j;
}

/// One input of the signature, for graph input `arg`.
InputSpec input_spec(const ex::InputSpec& s, Argument arg) {
  InputSpec spec;
  spec.arg = std::move(arg);
  using T = ex::InputSpec::Tag;
  switch (s.tag()) {
    case T::USER_INPUT: spec.kind = InputSpec::Kind::UserInput; break;
    case T::PARAMETER: spec.kind = InputSpec::Kind::Parameter; spec.target = s.get_parameter().get_parameter_name(); break;
    case T::BUFFER:
      spec.kind = InputSpec::Kind::Buffer;
      spec.target = s.get_buffer().get_buffer_name();
      spec.persistent = s.get_buffer().get_persistent();
      break;
    case T::TENSOR_CONSTANT:
      spec.kind = InputSpec::Kind::TensorConstant;
      spec.target = s.get_tensor_constant().get_tensor_constant_name();
      break;
    case T::CUSTOM_OBJ: spec.kind = InputSpec::Kind::CustomObj; spec.target = s.get_custom_obj().get_custom_obj_name(); break;
    case T::TOKEN: spec.kind = InputSpec::Kind::Token; break;
    case T::CONSTANT_INPUT:
      spec.kind = InputSpec::Kind::ConstantInput;
      spec.target = s.get_constant_input().get_name();
      spec.constant = to_constant(s.get_constant_input().get_value());
      break;
  }
  return spec;
}

/// One output of the signature, for graph output `arg`.
OutputSpec output_spec(const ex::OutputSpec& s, Argument arg) {
  OutputSpec spec;
  spec.arg = std::move(arg);
  using T = ex::OutputSpec::Tag;
  switch (s.tag()) {
    case T::USER_OUTPUT: spec.kind = OutputSpec::Kind::UserOutput; break;
    case T::LOSS_OUTPUT: spec.kind = OutputSpec::Kind::LossOutput; break;
    case T::BUFFER_MUTATION: spec.kind = OutputSpec::Kind::BufferMutation; spec.target = s.get_buffer_mutation().get_buffer_name(); break;
    case T::GRADIENT_TO_PARAMETER:
      spec.kind = OutputSpec::Kind::GradientToParameter;
      spec.target = s.get_gradient_to_parameter().get_parameter_name();
      break;
    case T::GRADIENT_TO_USER_INPUT:
      spec.kind = OutputSpec::Kind::GradientToUserInput;
      spec.target = s.get_gradient_to_user_input().get_user_input_name();
      break;
    case T::USER_INPUT_MUTATION:
      spec.kind = OutputSpec::Kind::UserInputMutation;
      spec.target = s.get_user_input_mutation().get_user_input_name();
      break;
    case T::TOKEN: spec.kind = OutputSpec::Kind::Token; break;
    case T::PARAMETER_MUTATION:
      spec.kind = OutputSpec::Kind::ParameterMutation;
      spec.target = s.get_parameter_mutation().get_parameter_name();
      break;
  }
  return spec;
}

}  // namespace

ExportedGraph parse_exported_program(const std::string& json_text, const std::string& where) {
  const json j = checked_program_json(json_text, where);
  ex::ExportedProgram ep;
  try {
    ep = j.get<ex::ExportedProgram>();
  } catch (const json::exception& e) {
    bad_archive(where, fmt::format("malformed ExportedProgram ({})", e.what()));
  }

  ExportedGraph out;
  out.schema_major = ep.get_schema_version().get_major();
  out.schema_minor = ep.get_schema_version().get_minor();
  out.torch_version = ep.get_torch_version();
  out.verifiers = ep.get_verifiers();
  const ex::GraphModule& gm = ep.get_graph_module();
  try {
    GraphBuilder builder(gm.get_graph(), nullptr, where);
    out.graph = std::move(*builder.build());
    const auto& inputs = gm.get_signature().get_input_specs();
    for (size_t i = 0; i < inputs.size(); ++i)
      out.input_specs.push_back(input_spec(inputs[i], i < out.graph.inputs().size() ? out.graph.inputs()[i] : Argument{}));
    if (out.input_specs.size() != out.graph.inputs().size())
      bad_archive(where, fmt::format("signature has {} input specs for {} graph inputs", out.input_specs.size(), out.graph.inputs().size()));
    const auto& outputs = gm.get_signature().get_output_specs();
    for (size_t i = 0; i < outputs.size(); ++i)
      out.output_specs.push_back(output_spec(outputs[i], i < out.graph.outputs().size() ? out.graph.outputs()[i] : Argument{}));
    if (out.output_specs.size() != out.graph.outputs().size())
      bad_archive(where, fmt::format("signature has {} output specs for {} graph outputs", out.output_specs.size(), out.graph.outputs().size()));
  } catch (const std::bad_variant_access&) {
    bad_archive(where, "a union in the signature or graph has no member this schema knows (written by a newer torch?)");
  }

  for (const auto& [sym, rc] : ep.get_range_constraints()) out.range_constraints[sym] = {rc.get_min_val(), rc.get_max_val()};
  for (const ex::ModuleCallEntry& entry : gm.get_module_call_graph())
    if (entry.get_fqn().empty() && entry.get_signature() && entry.get_signature()->get_forward_arg_names())
      out.forward_arg_names = *entry.get_signature()->get_forward_arg_names();
  return out;
}

std::vector<PayloadEntry> parse_payload_config(const std::string& json_text, const std::string& where) {
  ex::PayloadConfig config;
  try {
    const json j = json::parse(json_text);
    check_integers(j, where);
    config = j.get<ex::PayloadConfig>();
  } catch (const json::exception& e) {
    bad_archive(where, fmt::format("malformed payload config ({})", e.what()));
  }
  std::vector<PayloadEntry> out;
  for (const auto& [fqn, meta] : config.get_config()) {
    PayloadEntry e{fqn, meta.get_path_name(), meta.get_is_param(), meta.get_use_pickle(), std::nullopt};
    try {
      if (meta.get_tensor_meta()) e.meta = to_meta(*meta.get_tensor_meta(), where + " '" + fqn + "'");
    } catch (const std::bad_variant_access&) {
      bad_archive(where, fmt::format("the tensor_meta of '{}' has a union with no member this schema knows (a size that is neither "
                             "as_int nor as_expr?): the archive is corrupt", fqn));
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.fqn < b.fqn; });
  return out;
}

}  // namespace pt2diff
