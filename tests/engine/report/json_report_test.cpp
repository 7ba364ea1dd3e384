// tests/engine/report/json_report_test.cpp — each docs/*.schema.json of the engine's JSON documents (the report, the
// size sweep, the recheck) is the schema its writer's description reads off, and the writer keeps what it says.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "pt2diff/diff.h"
#include "pt2diff/inspect.h"
#include "pt2diff/recheck.h"
#include "pt2diff/sizes.h"
#include "pt2diff/sweep.h"

namespace pt2diff {
namespace {

/// Each JSON document the engine writes, its schema as the engine describes it, and its file in docs/.
struct Document {
  const char* file;
  std::string (*schema)();
};
const Document kDocuments[] = {{"report.schema.json", report_json_schema},
                               {"sizes.schema.json", sizes_json_schema},
                               {"recheck.schema.json", recheck_json_schema},
                               {"sweep.schema.json", sweep_json_schema},
                               {"inspect.schema.json", inspect_json_schema}};

TEST(JsonSchemas, AreTheDocsSchemas) {
  for (const Document& d : kDocuments) {
    const std::string path = std::string(PT2DIFF_FIXTURES) + "/../docs/" + d.file;
    const std::string want = d.schema();
    if (std::getenv("PT2DIFF_WRITE_SCHEMA")) std::ofstream(path) << want;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream doc;
    doc << in.rdbuf();
    EXPECT_TRUE(doc.str() == want)
        << "docs/" << d.file << " is not the schema its writer describes; write it again with "
        << "PT2DIFF_WRITE_SCHEMA=1 build/tests/engine_tests --gtest_filter=JsonSchemas.AreTheDocsSchemas";
  }
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
    for (const nlohmann::json& key : (*s)["required"])
      EXPECT_TRUE(value.contains(key.get<std::string>())) << path << "." << key << " is required";
  }
  if (value.is_array() && s->contains("items"))
    for (const nlohmann::json& item : value) expect_keys_match(item, (*s)["items"], root, path + "[]");
}

TEST(JsonSchemas, AReportWithEveryPartWritesTheSchemasFields) {
  DiffResult r;
  NodeError node;
  node.name = "mm";
  node.target = "aten.mm.default";
  node.backward_of = "linear";
  ValueError value, size;
  value.name = "mm";
  value.has_compiled_local = true;
  size.name = "size";
  size.compared = false;
  node.values = {value, size};
  r.nodes.push_back(node);
  r.ranking = {0};
  OutputVerdict written;
  written.name = "input 'x' after the graph";
  written.value = "x";
  written.written_input = true;
  r.outputs.push_back(written);
  CompileRecord compile;
  compile.what = "graph";
  compile.failure = FailureKind::TimedOut;
  compile.shapes = ShapeCompile{};
  compile.shapes->dims.push_back(DynamicDim{});
  r.compiles.push_back(compile);
  KernelCall call;
  call.name = "cpp_fused_0";
  call.code = "void kernel() {}";
  KernelBuffer judged, internal;
  judged.buffer = "buf0";
  judged.judged = true;
  internal.buffer = "buf1";
  internal.why_not = "an internal step";
  call.buffers = {judged, internal};
  r.kernels.kernels.push_back(call);
  r.kernels.first_failing = 0;
  r.kernels.inside = KernelCulprit{};
  r.kernels.nonfinite_origin = NonfiniteOrigin{};
  Localization l;
  l.probes.emplace_back();
  l.probes.back().failure = FailureKind::CompileFailed;
  l.repro = Repro{};
  l.repro->artifacts.push_back({"output_code", "out.py"});
  Hint hint;
  hint.kind = "dtype_promotion";
  hint.evidence = {{"ratio", 2.0}};
  l.hints.push_back(hint);
  r.localization = l;
  r.workaround = Workaround{};
  r.workaround->nodes.emplace_back();
  r.workaround->levers.emplace_back();
  NodeFinding finding;
  finding.also = {"mm_1"};
  finding.also_ratios = {3.0};
  r.node_verdict.findings.push_back(finding);
  r.node_verdict.confirmation = NodeConfirmation{};
  r.autocast.emplace_back();
  r.stages.emplace_back();
  r.eager_nonfinite = "loss is NaN";
  const nlohmann::json report = nlohmann::json::parse(to_json(r));
  const nlohmann::json schema = nlohmann::json::parse(report_json_schema());
  expect_keys_match(report, schema, schema, "report");
  EXPECT_EQ(report["kernels"]["inside"]["code"], "void kernel() {}");
  EXPECT_EQ(report["nodes"][0]["values"][1].count("local"), 0u) << "a value not compared has no metrics";
  EXPECT_EQ(report["kernels"]["kernels"][0]["buffers"][1].count("metrics"), 0u) << "an unjudged buffer has no metrics";
}

TEST(JsonSchemas, NonFiniteNumbersAreStrings) {
  DiffResult r;
  r.node_verdict.worst_ratio = INFINITY;
  NodeError node;
  node.name = "mm";
  node.local_ulp = NAN;
  node.compiled_local_ulp = -1;
  r.nodes.push_back(node);
  const nlohmann::json report = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(report["node_verdict"]["worst_ratio"], "Infinity");
  EXPECT_EQ(report["nodes"][0]["local_ulp"], "NaN");
  EXPECT_TRUE(report["nodes"][0]["compiled_local_ulp"].is_null()) << "no exploded compile";
}

}  // namespace
}  // namespace pt2diff
