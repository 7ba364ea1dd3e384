// engine/inspect/inspect_json.cpp — the InspectReport as JSON (docs/inspect.schema.json).
#include <nlohmann/json.hpp>

#include "engine/inspect/autocast_json.h"
#include "pt2diff/inspect.h"

namespace pt2diff {

nlohmann::json autocast_json(const std::vector<AutocastRegion>& regions) {
  nlohmann::json a = nlohmann::json::array();
  for (const AutocastRegion& r : regions)
    a.push_back({{"node", r.node}, {"device_type", r.device_type}, {"dtype", r.dtype}, {"enabled", r.enabled},
                 {"cache_enabled", r.cache_enabled}, {"depth", r.depth}, {"body_nodes", r.body_nodes}});
  return a;
}

nlohmann::json inlined_json(const std::vector<InlinedRegion>& regions) {
  nlohmann::json a = nlohmann::json::object();
  for (const InlinedRegion& r : regions) {
    nlohmann::json nodes = nlohmann::json::object(), values = nlohmann::json::object();
    for (const auto& [body, name] : r.nodes) nodes[body] = name;
    for (const auto& [body, name] : r.values) values[body] = name;
    a[r.region] = {{"nodes", std::move(nodes)}, {"values", std::move(values)}};
  }
  return a;
}

std::string to_json(const InspectReport& r) {
  using nlohmann::json;
  auto tensors = [](const std::vector<InspectReport::Tensor>& rows) {
    json a = json::array();
    for (const auto& t : rows) a.push_back({{"name", t.name}, {"role", t.role}, {"type", t.type}, {"device", t.device}});
    return a;
  };
  auto ops = [](const std::vector<InspectReport::Op>& rows) {
    json a = json::array();
    for (const auto& op : rows)
      a.push_back({{"target", op.target}, {"count", op.count}, {"route", op.route}, {"unsupported_reason", op.unsupported_reason},
                   {"nodes", op.nodes}});
    return a;
  };
  json j = {
      {"path", r.path},
      {"model", r.model_name},
      {"torch_version", r.torch_version},
      {"schema", r.schema},
      {"dialect", r.dialect},
      {"nodes", r.nodes},
      {"top_level_nodes", r.top_level_nodes},
      {"subgraphs", r.subgraphs},
      {"export_device", r.export_device},
      {"inputs", tensors(r.inputs)},
      {"outputs", tensors(r.outputs)},
      {"weights", {{"parameters", r.parameters}, {"buffers", r.buffers}, {"constants", r.constants},
                   {"custom_objects", r.custom_objects}, {"bytes", r.weight_bytes}}},
      {"dtypes", r.dtypes},
      {"dynamic_dims", r.dynamic_dims},
      {"ops", ops(r.ops)},
      {"unsupported", ops(r.unsupported)},
      {"autocast", autocast_json(r.autocast)},
      {"inlined", inlined_json(r.inlined)},
      {"has_sample_inputs", r.has_sample_inputs},
      {"memory", {{"bytes", r.memory_bytes}, {"largest", r.memory_largest}}},
  };
  if (r.binding) {
    json values = json::object();
    for (const auto& [n, d] : r.binding->values) values[n] = d;
    j["binding"] = {{"origin", r.binding->origin}, {"ok", r.binding->ok}, {"message", r.binding->message}, {"values", values}};
  } else {
    j["binding"] = nullptr;
  }
  return j.dump(2) + "\n";
}

}  // namespace pt2diff
