// pt2diff/program.h — a loaded torch.export archive: the IR plus its weights.
//
//   pt2diff::Program p = pt2diff::load_program("model.pt2");
//   std::cout << p.ir.graph.nodes().size() << " nodes, " << p.weight_bytes() << " bytes of weights\n";
//
// Reads archives written by torch.export.save with torch 2.11 to 2.13 (schema major 8). The output
// pytree is never needed, so archives whose outputs name Python classes load fine.
#pragma once

#include <ATen/core/Tensor.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pt2diff/graph.h"
#include "pt2diff/inputs.h"

namespace pt2diff {

struct LoadOptions {
  /// Which `models/<name>.json` to load; empty: the only one, or "model" when there are several.
  std::string model_name;
};

struct Program {
  std::string path;
  std::string model_name;
  ExportedGraph ir;
  /// Parameters, buffers and lifted tensor constants by FQN. Entries saved as views of one storage
  /// share it here too (aliasing survives loading).
  std::map<std::string, at::Tensor> state;
  /// TorchBind objects the graph refers to (by FQN): pt2diff cannot run them.
  std::vector<std::string> custom_objects;
  /// The archive's sample inputs (`data/sample_inputs/<model>.pt`), when it has them.
  std::optional<UserInputs> sample_inputs;
  /// Why the archive's sample inputs are absent though it has a record of them (unreadable, damaged):
  /// one line, empty otherwise.
  std::string sample_inputs_problem;
  /// The device the graph was exported on, read from its tensors' metadata ("cuda:0" for a GPU export,
  /// else "cpu"). pt2diff's own runs are on the CPU whatever it is: weights and inputs load there, and
  /// devices baked into the graph are rewritten (docs/cuda-graphs.md). A compiler targets it by default.
  Device export_device;
  /// The archive itself when it was loaded from memory (load_program_from_memory), else null. A compiler
  /// that runs in another process (the Inductor worker, an external worker) reads archives from a path:
  /// it is handed a temporary copy of these bytes, removed with the backend.
  std::shared_ptr<const std::string> archive_bytes;

  /// The weights copied to a GPU for runs of this program, shared by every Interpreter of it and of its copies
  /// (the engine's runs, the eager and fault backends' own interpreters): one copy per device however many
  /// interpreters run it, freed with the last Program that shares it. Made by the loaders; null (a Program built
  /// by hand): each Interpreter keeps its own.
  struct DeviceWeights {
    std::mutex mutex;
    std::map<std::string, std::map<std::string, at::Tensor>> by_device;  ///< device ("cuda:0") -> FQN -> weight
  };
  std::shared_ptr<DeviceWeights> device_weights;

  /// Bytes of distinct storages behind `state` (shared storages counted once).
  int64_t weight_bytes() const;
};

/// Loads `path`; throws pt2diff::Error(BadArchive) with one line naming the file and the problem.
Program load_program(const std::string& path, const LoadOptions& options = {});
/// The same from the bytes of an archive (what torch.export.save writes to a BytesIO); `name` stands for
/// the path in messages and reports ("<ExportedProgram>"). The bytes are kept in Program::archive_bytes.
Program load_program_from_memory(std::string bytes, const std::string& name, const LoadOptions& options = {});

}  // namespace pt2diff
