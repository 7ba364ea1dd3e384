// pt2diff/graph.h — the graph IR: values, nodes, arguments, signature. Pure C++, no torch headers.
//
// A `Graph` is what a torch.export program's graph becomes once loaded: `Value`s (edges, identified
// by `ValueId`; the name is for people) and `Node`s (one op call each) in topological order. The
// graph never changes after `Graph::finalize()`: later stages keep per-run state elsewhere.
//
//   pt2diff::ExportedGraph eg = ...;            // from load_program(): see program.h
//   for (const pt2diff::Node& n : eg.graph.nodes())
//     std::cout << n.name << " = " << n.target << "  # " << n.source.user_frame() << "\n";
//
// Why not the schema's own types? They are tied to one torch version's generated header (heavy
// to compile, nlohmann in every TU). The IR keeps every Argument kind of schema major 8 as plain
// data and resolves value names to ids once.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <utility>
#include <vector>

namespace pt2diff {

/// Element types, numbered like c10::ScalarType so that a cast is the conversion.
/// (torch.export's JSON numbers them differently: see `dtype_from_export()`.)
enum class DType : int8_t {
  Undefined = -1,
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4,
  Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10,
  Bool = 11, BFloat16 = 15,
  Float8_e5m2 = 23, Float8_e4m3fn = 24, Float8_e5m2fnuz = 25, Float8_e4m3fnuz = 26,
  UInt16 = 27, UInt32 = 28, UInt64 = 29,
  Float8_e8m0fnu = 44,
};

/// Maps the export schema's ScalarType number to a DType; nullopt for UNKNOWN or an unknown number.
std::optional<DType> dtype_from_export(int64_t export_scalar_type);
/// "float32", "bfloat16", ... (PyTorch's Python names, as users know them).
std::string_view dtype_name(DType dtype);
/// Bytes per element (0 for Undefined).
int64_t element_size(DType dtype);
bool is_floating(DType dtype);  ///< Half, BFloat16, Float, Double and the float8 types.
bool is_complex(DType dtype);
bool is_float8(DType dtype);

enum class Layout : int8_t { Unknown = 0, SparseCoo, SparseCsr, SparseCsc, SparseBsr, SparseBsc, Mkldnn, Strided };
enum class MemoryFormat : int8_t { Unknown = 0, Contiguous, ChannelsLast, ChannelsLast3d, Preserve };
std::string_view layout_name(Layout layout);
std::string_view memory_format_name(MemoryFormat format);

struct Device {
  std::string type = "cpu";  ///< "cpu", "cuda", "meta", ...
  int64_t index = -1;        ///< -1: no index given
  std::string str() const;   ///< "cpu", "cuda:0"
  bool operator==(const Device&) const = default;
};

/// "cpu", "cuda", "cuda:1", "meta" → Device. Throws pt2diff::Error(Usage) naming `text` otherwise.
Device parse_device(const std::string& text);

/// A size, stride or offset: a literal, or a symbol expression with its example-time hint.
struct SymInt {
  std::optional<int64_t> value;  ///< set when static
  std::string expr;              ///< sympy text of a dynamic dim ("s77", "2*s77"); empty when static
  std::optional<int64_t> hint;   ///< the value seen at export time, when dynamic
  bool is_static() const { return value.has_value(); }
  /// The static value, else the hint; nullopt when neither is known.
  std::optional<int64_t> concrete() const { return value ? value : hint; }
  std::string str() const;  ///< "8" or "s77"
};

struct TensorMeta {
  DType dtype = DType::Undefined;
  std::vector<SymInt> sizes;
  std::vector<SymInt> strides;
  SymInt storage_offset{0, {}, {}};
  Device device;
  Layout layout = Layout::Strided;
  bool requires_grad = false;
  bool is_dynamic() const;
  /// Product of the concrete sizes; nullopt when one is unknown.
  std::optional<int64_t> numel() const;
  std::string shape_str() const;  ///< "[4, 32]", "[s77, 16]"
};

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;
inline constexpr NodeId kGraphInput = -1;  ///< producer of a value that is a graph input

enum class ValueKind : int8_t { Tensor, SymInt, SymFloat, SymBool, Token, CustomObj };
std::string_view value_kind_name(ValueKind kind);

/// An edge of the graph: one tensor, symbolic scalar, token or custom object.
struct Value {
  ValueId id = kNoValue;
  std::string name;
  ValueKind kind = ValueKind::Tensor;
  std::optional<TensorMeta> meta;  ///< tensors only (absent when the archive gave none)
  std::optional<double> sym_hint;  ///< sym values: the example-time value, when the archive has one
  NodeId producer = kGraphInput;   ///< set by Graph::finalize()
  std::vector<NodeId> users;       ///< distinct consumer nodes in topological order (finalize())
  bool is_graph_output = false;    ///< set by Graph::finalize()
};

class Graph;
struct Argument;

/// A symbolic scalar argument: a value by name, or a literal.
struct SymArg {
  ValueId value = kNoValue;
  std::variant<int64_t, double, bool> literal{int64_t{0}};
  bool is_literal() const { return value == kNoValue; }
};

/// A higher-order op's body (cond branches, while_loop body, map fn): a graph of its own.
struct Subgraph {
  std::string name;
  std::shared_ptr<const Graph> graph;
};

struct NamedArgument;

/// One argument or output slot of a node: every `Argument` kind of schema major 8.
struct Argument {
  enum class Kind : int8_t {
    None, Tensor, Tensors, OptionalTensor, OptionalTensors, NestedTensors,
    Int, Ints, IntLists, Float, Floats, FloatLists, Bool, Bools, String, Strings, Complex,
    SymInt, SymInts, SymFloat, SymFloats, SymBool, SymBools,
    ScalarType, MemoryFormat, Layout, Device, Graph, CustomObj, Operator, StringToArgument,
  };
  using Payload = std::variant<
      std::monostate,                        // None
      ValueId,                               // Tensor, OptionalTensor (kNoValue = None), CustomObj
      std::vector<ValueId>,                  // Tensors, OptionalTensors (kNoValue = None)
      std::vector<std::vector<ValueId>>,     // NestedTensors
      int64_t,                               // Int
      std::vector<int64_t>,                  // Ints
      std::vector<std::vector<int64_t>>,     // IntLists
      double,                                // Float
      std::vector<double>,                   // Floats
      std::vector<std::vector<double>>,      // FloatLists
      bool,                                  // Bool
      std::vector<bool>,                     // Bools
      std::string,                           // String, Operator
      std::vector<std::string>,              // Strings
      std::complex<double>,                  // Complex
      SymArg,                                // SymInt, SymFloat, SymBool
      std::vector<SymArg>,                   // SymInts, SymFloats, SymBools
      DType, MemoryFormat, Layout, Device,   // ScalarType, MemoryFormat, Layout, Device
      Subgraph,                              // Graph
      std::vector<NamedArgument>>;           // StringToArgument

  Kind kind = Kind::None;
  Payload payload;

  /// The tensor values this argument refers to (empty for non-tensor kinds).
  std::vector<ValueId> tensor_values() const;
  /// Every value referred to: tensors, sym scalars, custom objects.
  std::vector<ValueId> values() const;

  template <class T>
  const T& as() const { return std::get<T>(payload); }
};

std::string_view argument_kind_name(Argument::Kind kind);

struct NamedArgument {
  std::string name;          ///< the op schema's argument name ("" for HOP operands)
  Argument arg;
  bool keyword = false;      ///< passed by keyword (kind 2 in the archive)
};

/// One frame of `nn_module_stack`: the module path a user knows ("encoder.layers.0.attn").
struct ModuleFrame {
  std::string key;
  std::string path;
  std::string type;  ///< "torch.nn.modules.linear.Linear"
};

/// Where a node came from in the user's program.
struct SourceInfo {
  std::string stack_trace;                  ///< as recorded at export
  std::vector<ModuleFrame> nn_module_stack; ///< outermost first
  std::string torch_fn;
  /// In a training step's graph (docs/training.md), a backward node: the forward node it is the gradient of
  /// (pt2diff_capture records it in the node's `custom` metadata; its stack trace is that node's). Else empty.
  std::string backward_of;
  /// The innermost frame that is not inside torch itself: `file.py:39 in forward: <code>`; empty if unknown.
  std::string user_frame() const;
  /// Where the node comes from, as reports say it: user_frame(), and for a backward node
  /// "gradient of NODE at FRAME" (or "gradient of NODE" without a frame).
  std::string origin() const;
  /// Innermost module path, "" for the root module.
  std::string module_path() const;
};

struct Node {
  NodeId id = 0;
  std::string name;
  std::string target;  ///< "torch.ops.aten.add.Tensor", "torch.ops.higher_order.cond", "_operator.mul"
  std::vector<NamedArgument> inputs;
  std::vector<Argument> outputs;
  SourceInfo source;
  std::map<std::string, std::string> metadata;  ///< the remaining metadata entries, verbatim
  bool is_hop_single_tensor_return = false;

  /// Every value this node reads (tensors, sym scalars, custom objects), deduplicated.
  std::vector<ValueId> input_values() const;
  /// Every value this node defines.
  std::vector<ValueId> output_values() const;
  /// Subgraphs passed to this node (higher-order ops).
  std::vector<const Subgraph*> subgraphs() const;
  /// The input given for the schema argument `name`; nullptr when the node omits it (its default applies).
  const NamedArgument* input(std::string_view name) const;
};

/// A `torch.autocast` region of a training-IR graph: one `wrap_with_autocast` node, the autocast it
/// sets and the nodes of its body. (A core-ATen graph has none: run_decompositions() writes autocast's
/// casts into the graph as `_to_copy` nodes.)
struct AutocastRegion {
  std::string node;             ///< the wrap_with_autocast node (in the graph that holds it: see `depth`)
  std::string device_type;      ///< "cpu", "cuda"
  std::string dtype;            ///< "bfloat16", "float16" (the device's default when the region names none)
  DType dtype_value = DType::BFloat16;
  bool enabled = true;          ///< false: `torch.autocast(..., enabled=False)`, a region that turns autocast off
  bool cache_enabled = true;
  std::vector<std::string> body_nodes;  ///< the body's nodes, in order
  int depth = 0;                ///< 0 for a region of the top-level graph, 1 inside another HOP's body...
};

/// A top-level autocast region as localization inlines it to go inside it (graphs/inline_region.h), by the
/// names it gives: (body name, name in the inlined graph and in reports) of each body op node and of each
/// value a body op produces, in graph order. The worker is sent the same and builds its graph from it.
struct InlinedRegion {
  std::string region;
  std::vector<std::pair<std::string, std::string>> nodes, values;
};

/// The autocast a `torch.ops.higher_order.wrap_with_autocast` node sets; nullopt (and `why` set) when
/// `node` is another op or its arguments are not (device_type, dtype, enabled, cache_enabled, body, ...).
std::optional<AutocastRegion> autocast_region(const Node& node, std::string& why);
/// Every autocast region of `graph`, those nested in any higher-order op's body included, in node order.
std::vector<AutocastRegion> autocast_regions(const Graph& graph);
/// One line: "softmax: autocast cpu bfloat16, 2 nodes: linear, softmax" ("autocast off" when disabled;
/// at most 8 body nodes named).
std::string autocast_summary(const AutocastRegion& region);

/// Values and nodes in topological order. Build with add_*(), then finalize() once.
class Graph {
 public:
  /// Adds a value; its name must be new. Throws pt2diff::Error on a duplicate.
  ValueId add_value(std::string name, ValueKind kind, std::optional<TensorMeta> meta = {});
  /// Returns the id of an existing value by name, or kNoValue.
  ValueId find(std::string_view name) const;
  NodeId add_node(Node node);
  void add_input(Argument arg) { inputs_.push_back(std::move(arg)); }
  void add_output(Argument arg) { outputs_.push_back(std::move(arg)); }

  /// Computes producers, users and output flags and checks the invariants: every value used is
  /// defined before use, defined once, and outputs exist. Throws pt2diff::Error naming the node.
  void finalize();

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Value& value(ValueId id) const { return values_.at(static_cast<size_t>(id)); }
  Value& mutable_value(ValueId id) { return values_.at(static_cast<size_t>(id)); }
  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Argument>& inputs() const { return inputs_; }
  const std::vector<Argument>& outputs() const { return outputs_; }
  /// Tensor/sym values that are graph inputs, in input order.
  std::vector<ValueId> input_values() const;
  std::vector<ValueId> output_values() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<Argument> inputs_;
  std::vector<Argument> outputs_;
  std::unordered_map<std::string, ValueId> by_name_;
};

/// A constant a user input was specialized to at export (Python scalars become these).
using ConstantValue = std::variant<std::monostate, int64_t, double, bool, std::string>;
std::string constant_str(const ConstantValue& value);

/// One graph input's role (torch.export's `input_specs`, same order as Graph::inputs()).
struct InputSpec {
  enum class Kind : int8_t { UserInput, Parameter, Buffer, TensorConstant, CustomObj, Token, ConstantInput };
  Kind kind = Kind::UserInput;
  Argument arg;            ///< the graph input (a tensor, sym or literal argument)
  std::string target;      ///< parameter/buffer/constant/custom-object FQN, or the constant input's name
  bool persistent = true;  ///< buffers
  ConstantValue constant;  ///< ConstantInput only
};

/// One graph output's role (`output_specs`, same order as Graph::outputs()).
struct OutputSpec {
  enum class Kind : int8_t { UserOutput, LossOutput, BufferMutation, GradientToParameter, GradientToUserInput, UserInputMutation, Token, ParameterMutation };
  Kind kind = Kind::UserOutput;
  Argument arg;
  std::string target;  ///< mutated buffer/parameter/input name, where there is one
};

std::string_view input_kind_name(InputSpec::Kind kind);
std::string_view output_kind_name(OutputSpec::Kind kind);

struct RangeConstraint {
  std::optional<int64_t> min;  ///< nullopt: unbounded
  std::optional<int64_t> max;
};

/// Everything the engine uses from one exported program: graph, signature and dynamic-shape ranges.
struct ExportedGraph {
  Graph graph;
  std::vector<InputSpec> input_specs;
  std::vector<OutputSpec> output_specs;
  std::map<std::string, RangeConstraint> range_constraints;  ///< symbol → range
  std::vector<std::string> forward_arg_names;  ///< the user-facing argument names, when recorded
  int64_t schema_major = 0;
  int64_t schema_minor = 0;
  std::string torch_version;  ///< the torch that wrote the archive
  std::vector<std::string> verifiers;  ///< "ATEN" (training IR) or empty
};

}  // namespace pt2diff
