// engine/inspect/autocast_json.h — autocast regions as JSON, for inspect and the diff report alike.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "pt2diff/graph.h"

namespace pt2diff {

/// One object per region: node, device_type, dtype, enabled, cache_enabled, depth, body_nodes
/// (docs/inspect.schema.json and docs/report.schema.json, "autocast").
nlohmann::json autocast_json(const std::vector<AutocastRegion>& regions);

}  // namespace pt2diff
