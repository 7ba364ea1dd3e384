// pt2diff/inputs.h — the values a user feeds the graph: read, drawn at random, and bound.
//
//   pt2diff::Program program = pt2diff::load_program("mlp.pt2");
//   pt2diff::UserInputs raw = pt2diff::load_inputs("mlp_inputs.pt");   // torch.save((x,)) in Python
//   pt2diff::BoundInputs bound = pt2diff::bind_inputs(program, raw);     // throws on any mismatch
//
// Binding follows the archive's signature: positional values fill the user inputs in order, then
// keyword values fill the rest by name. Every mismatch (count, name, dtype, shape, device, a dynamic
// dimension outside its range, a Python scalar that differs from the value the export specialized
// on) is one pt2diff::Error(BadInputs) naming the input and what to do.
#pragma once

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pt2diff {

struct Program;

/// One input value: a tensor or a Python scalar (None, bool, int, float, str).
using InputValue = std::variant<std::monostate, at::Tensor, bool, int64_t, double, std::string>;
/// "float32[4, 32] cpu", "int 3", "None".
std::string describe(const InputValue& value);

/// Inputs as the user gave them.
struct UserInputs {
  std::vector<InputValue> args;                               ///< positional
  std::vector<std::pair<std::string, InputValue>> kwargs;     ///< keyword, in file order
  std::string origin;                                         ///< file name or "sample inputs" / "random (seed N)"
};

/// Reads a torch.save file holding a tuple or list (positional), a str-keyed dict (keyword), an
/// `(args_tuple, kwargs_dict)` pair (as torch.export stores sample inputs), or a single tensor.
/// Never runs arbitrary pickled code: only tensors, containers and Python scalars are accepted.
UserInputs load_inputs(const std::string& path);

/// Draws inputs from the graph's metadata with a fixed seed: floating tensors ~ N(0, 1), integer
/// tensors uniform in [0, 10), bools fair coins; dynamic dims take their export-time hint.
/// Python scalars the export specialized on take their recorded value.
UserInputs random_inputs(const Program& program, uint64_t seed);

/// The user inputs in signature order (one per UserInput/ConstantInput spec), checked.
struct BoundInputs {
  struct Entry {
    std::string name;   ///< the graph's name for it ("x", "mask", "temperature")
    size_t spec_index;  ///< index into ExportedGraph::input_specs
    InputValue value;
  };
  std::vector<Entry> entries;
  std::map<std::string, int64_t> symbols;  ///< dynamic-dim symbol → the size bound to it ("s77" → 6)
  std::string origin;
};

/// Binds `inputs` to `program`'s user inputs; throws pt2diff::Error(BadInputs) on the first mismatch.
BoundInputs bind_inputs(const Program& program, const UserInputs& inputs);

}  // namespace pt2diff
