// engine/inspect/autocast_json.h — autocast regions as JSON, for inspect, the diff report and the worker.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "graphs/json_fields.h"
#include "pt2diff/graph.h"

namespace pt2diff {

/// One object per region: node, device_type, dtype, enabled, cache_enabled, depth, body_nodes
/// (docs/inspect.schema.json and docs/report.schema.json, "autocast").
nlohmann::json autocast_json(const std::vector<AutocastRegion>& regions);
/// {region: {"nodes": {body name: inlined name}, "values": {...}}}: inspect's "inlined", and what a worker's
/// load request carries for the regions the engine inlined (docs/worker-protocol.md).
nlohmann::json inlined_json(const std::vector<InlinedRegion>& regions);

}  // namespace pt2diff

namespace pt2diff::json_fields {

/// An autocast region as inspect's document and the diff report both show it (inspect_json.cpp).
Object<AutocastRegion> describe(Tag<AutocastRegion>);

}  // namespace pt2diff::json_fields
