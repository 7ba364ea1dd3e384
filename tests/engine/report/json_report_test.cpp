// tests/engine/report/json_report_test.cpp — docs/report.schema.json is the schema json_report.cpp's description of
// the report reads off (the writer's own fields), and the writer keeps what its description says.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "pt2diff/diff.h"

namespace pt2diff {
namespace {

const std::string kDocsSchema = std::string(PT2DIFF_FIXTURES) + "/../docs/report.schema.json";

TEST(ReportSchema, IsTheDocsSchema) {
  const std::string want = report_json_schema();
  if (std::getenv("PT2DIFF_WRITE_SCHEMA")) std::ofstream(kDocsSchema) << want;
  std::ifstream in(kDocsSchema);
  ASSERT_TRUE(in) << kDocsSchema;
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_TRUE(doc.str() == want)
      << "docs/report.schema.json is not the schema engine/report/json_report.cpp describes; write it again with "
         "PT2DIFF_WRITE_SCHEMA=1 build/tests/engine_tests --gtest_filter=ReportSchema.IsTheDocsSchema";
}

/// Every key a report writes is a property of the schema, at every depth, and every required one is written: a
/// report with each optional part present (localization with a repro and hints, a workaround, a kernel table with a
/// judged and an unjudged buffer and the search inside, a node finding with its confirmation).
void expect_keys_match(const nlohmann::json& value, const nlohmann::json& schema, const nlohmann::json& root,
                       const std::string& path) {
  const nlohmann::json* s = &schema;
  if (s->contains("$ref")) s = &root["$defs"][(*s)["$ref"].get<std::string>().substr(std::string("#/$defs/").size())];
  if (s->contains("oneOf") && !value.is_null())
    for (const nlohmann::json& alt : (*s)["oneOf"])
      if (alt.value("type", "") == "object" || alt.contains("$ref")) return expect_keys_match(value, alt, root, path);
  if (value.is_object() && s->contains("properties")) {
    for (const auto& [key, v] : value.items()) {
      ASSERT_TRUE((*s)["properties"].contains(key)) << path << "." << key << " is written but not in the schema";
      expect_keys_match(v, (*s)["properties"][key], root, path + "." + key);
    }
    for (const std::string& key : (*s)["required"]) EXPECT_TRUE(value.contains(key)) << path << "." << key << " is required";
  }
  if (value.is_array() && s->contains("items"))
    for (const nlohmann::json& item : value) expect_keys_match(item, (*s)["items"], root, path + "[]");
}

TEST(ReportSchema, AReportWithEveryPartWritesTheSchemasFields) {
  DiffResult r;
  r.nodes.push_back({.name = "mm", .target = "aten.mm.default", .backward_of = "linear"});
  r.nodes.back().values.push_back({.name = "mm", .dtype = "float32", .shape = "[2, 2]", .has_compiled_local = true});
  r.nodes.back().values.push_back({.name = "size", .compared = false});
  r.ranking = {0};
  r.outputs.push_back({.name = "input 'x' after the graph", .value = "x", .written_input = true});
  r.compiles.push_back({.what = "graph", .failure = FailureKind::TimedOut, .shapes = ShapeCompile{.dims = {DynamicDim{}}}});
  KernelCall call{.name = "cpp_fused_0", .code = "void kernel() {}"};
  call.buffers.push_back({.buffer = "buf0", .judged = true});
  call.buffers.push_back({.buffer = "buf1", .judged = false, .why_not = "an internal step"});
  r.kernels.kernels.push_back(call);
  r.kernels.first_failing = 0;
  r.kernels.inside = KernelCulprit{.kind = "single_op"};
  r.kernels.nonfinite_origin = NonfiniteOrigin{.kind = "model"};
  Localization l;
  l.probes.push_back({.failure = FailureKind::CompileFailed});
  l.repro = Repro{.artifacts = {{"output_code", "out.py"}}};
  l.hints.push_back({.kind = "dtype_promotion", .evidence = {{"ratio", 2.0}}});
  r.localization = l;
  r.workaround = Workaround{.nodes = {EagerNode{}}, .levers = {EagerLever{}}};
  r.node_verdict.findings.push_back({.also = {"mm_1"}, .also_ratios = {3.0}});
  r.node_verdict.confirmation = NodeConfirmation{};
  r.autocast.push_back({.node = "wrap_with_autocast"});
  r.stages.push_back({.name = "plan_run"});
  r.eager_nonfinite = "loss is NaN";
  const nlohmann::json report = nlohmann::json::parse(to_json(r));
  const nlohmann::json schema = nlohmann::json::parse(report_json_schema());
  expect_keys_match(report, schema, schema, "report");
  EXPECT_EQ(report["kernels"]["inside"]["code"], "void kernel() {}");
  EXPECT_EQ(report["nodes"][0]["values"][1].count("local"), 0u) << "a value not compared has no metrics";
  EXPECT_EQ(report["kernels"]["kernels"][0]["buffers"][1].count("metrics"), 0u) << "an unjudged buffer has no metrics";
}

TEST(ReportSchema, NonFiniteNumbersAreStrings) {
  DiffResult r;
  r.node_verdict.worst_ratio = INFINITY;
  r.nodes.push_back({.name = "mm", .local_ulp = NAN, .compiled_local_ulp = -1});
  const nlohmann::json report = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(report["node_verdict"]["worst_ratio"], "Infinity");
  EXPECT_EQ(report["nodes"][0]["local_ulp"], "NaN");
  EXPECT_TRUE(report["nodes"][0]["compiled_local_ulp"].is_null()) << "no exploded compile";
}

}  // namespace
}  // namespace pt2diff
