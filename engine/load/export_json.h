// engine/load/export_json.h — torch.export's JSON (schema major 8) → the IR. Torch-free interface.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// The schema major this build reads (torch/_export/serde/schema.py SCHEMA_VERSION[0]).
inline constexpr int64_t kSchemaMajor = 8;

/// Parses `models/<name>.json`. `where` names the record in errors ("mlp.pt2: models/model.json").
/// Throws pt2diff::Error(BadArchive) on malformed JSON, another schema major or an unknown kind.
ExportedGraph parse_exported_program(const std::string& json_text, const std::string& where);

/// One entry of `<model>_weights_config.json` / `<model>_constants_config.json`.
struct PayloadEntry {
  std::string fqn;        ///< "fc1.weight"
  std::string path_name;  ///< record name below data/weights/ or data/constants/
  bool is_param = false;
  bool use_pickle = false;  ///< the record is a torch.save blob (tensor subclasses)
  std::optional<TensorMeta> meta;
};

/// Parses a payload config JSON (`{"config": {fqn: {...}}}`), sorted by fqn.
std::vector<PayloadEntry> parse_payload_config(const std::string& json_text, const std::string& where);

}  // namespace pt2diff
