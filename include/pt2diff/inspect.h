// pt2diff/inspect.h — what is in an archive, in terms a user knows, before anything runs.
//
//   pt2diff::Program p = pt2diff::load_program("mlp.pt2");
//   pt2diff::InspectReport r = pt2diff::inspect(p, pt2diff::load_inputs("mlp_inputs.pt"));
//   std::cout << pt2diff::to_text(r);          // or to_json(r) for machines
//   if (r.binding && !r.binding->ok) ...       // the inputs do not fit the graph: r.binding->message says why
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/inputs.h"
#include "pt2diff/program.h"

namespace pt2diff {

struct InspectReport {
  struct Op {
    std::string target;              ///< "torch.ops.aten.linear.default"
    int64_t count = 0;               ///< nodes calling it, subgraphs included
    std::string route;               ///< how pt2diff runs it: "dispatcher", "higher-order (subgraphs)", ...
    std::string unsupported_reason;  ///< empty when pt2diff can run it
    std::vector<std::string> nodes;  ///< node names (for unsupported ops: where they are)
  };
  struct Tensor {
    std::string name;    ///< graph name ("x") or FQN ("fc1.weight")
    std::string role;    ///< "user_input", "parameter", "user_output", "constant_input", ...
    std::string type;    ///< "float32[4, 32]", "int 0.5", ...
    std::string device;
  };
  struct Binding {
    std::string origin;  ///< "mlp_inputs.pt", "sample inputs", "random (seed 0)"
    bool ok = false;
    std::string message;  ///< the bind error when !ok
    std::vector<std::pair<std::string, std::string>> values;  ///< name → description, when ok
  };

  std::string path;
  std::string model_name;
  std::string torch_version;  ///< the torch that wrote the archive
  std::string schema;         ///< "8.17"
  std::string dialect;        ///< "ATEN (training IR)" or "core/inference"
  int64_t nodes = 0;          ///< every node, subgraphs included
  int64_t top_level_nodes = 0;
  int64_t subgraphs = 0;
  std::string export_device;  ///< "cpu", or "cuda:0" for a graph exported on a GPU (run on the CPU here)
  std::vector<Op> ops;                  ///< sorted by count, then name
  std::map<std::string, int64_t> dtypes;  ///< dtype → number of tensor values of that dtype
  std::vector<Tensor> inputs;           ///< user inputs and constant inputs, in signature order
  std::vector<Tensor> outputs;          ///< every graph output with its role
  int64_t parameters = 0, buffers = 0, constants = 0, custom_objects = 0;
  int64_t weight_bytes = 0;
  std::map<std::string, std::string> dynamic_dims;  ///< symbol → "[2, 64]"
  std::vector<Op> unsupported;          ///< ops pt2diff cannot run, with their nodes
  /// The graph's `torch.autocast` regions (training IR; a core-ATen graph has explicit casts instead):
  /// which nodes the native run runs under which autocast dtype.
  std::vector<AutocastRegion> autocast;
  /// The names the ops of each top-level autocast region take when localization goes inside it (the
  /// region inlined), as reports show them; a region that cannot be inlined has none.
  std::vector<InlinedRegion> inlined;
  bool has_sample_inputs = false;
  std::optional<Binding> binding;       ///< the given inputs, else the sample inputs
  /// What the main job's runs would hold at once (the estimate `--max-memory` checks, exploded compile
  /// included), dynamic dims sized by the bound inputs when they bind, else by their export-time hints.
  double memory_bytes = 0;
  std::string memory_largest;           ///< the value needing the most: "repeat_1 float32[40000, 40000]"
};

/// Summarizes `program` and, when `inputs` is given (else the archive's sample inputs), tries to bind them.
InspectReport inspect(const Program& program, const std::optional<UserInputs>& inputs = std::nullopt);
/// The human-readable summary.
std::string to_text(const InspectReport& report);
/// The same as JSON (schema: docs/inspect.schema.json).
std::string to_json(const InspectReport& report);
/// The JSON schema of to_json(InspectReport), read off the description the writer writes by
/// (engine/inspect/inspect_json.cpp); docs/inspect.schema.json is this text (JsonSchemas.AreTheDocsSchemas).
std::string inspect_json_schema();

}  // namespace pt2diff
