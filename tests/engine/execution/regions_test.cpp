// tests/engine/execution/regions_test.cpp — training-IR regions: torch.no_grad / torch.autocast blocks
// (wrap_with_set_grad_enabled, wrap_with_autocast) and invoke_subgraph. Bit-exactness against eager and
// the fp64 match are checked for every fixture in interpreter_test.cpp (grad_regions, autocast_regions,
// invoke_subgraph are runnable fixtures); here: that autocast is what makes them match, that the fp64
// run says it ignored it, and that inspect, the report and the dtype-promotion hint name the regions.
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>
#include <ATen/ops/equal.h>
#include <algorithm>

#include "../../test_support.h"
#include "pt2diff/advanced/backend.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/diff.h"
#include "pt2diff/inspect.h"
#include "graphs/inline_region.h"

namespace pt2diff {
namespace {

using testing::fixture;

struct Loaded {
  Program program;
  BoundInputs inputs;
};

Loaded load(const std::string& name) {
  Program p = load_program(fixture(name + ".pt2"));
  BoundInputs in = bind_inputs(p, load_inputs(fixture(testing::base_name(name) + "_inputs.pt")));
  return {std::move(p), std::move(in)};
}

TEST(AutocastRegions, AreReadFromTheTrainingIrGraph) {
  Loaded f = load("autocast_regions");
  std::vector<AutocastRegion> regions = autocast_regions(f.program.ir.graph);
  ASSERT_EQ(regions.size(), 3u);
  // The outer region: fc1, gelu, the disabled block, the matmul and fc2, in bfloat16.
  EXPECT_EQ(regions[0].device_type, "cpu");
  EXPECT_EQ(regions[0].dtype, "bfloat16");
  EXPECT_TRUE(regions[0].enabled);
  EXPECT_EQ(regions[0].depth, 0);
  EXPECT_NE(std::find(regions[0].body_nodes.begin(), regions[0].body_nodes.end(), "linear"), regions[0].body_nodes.end());
  // autocast(enabled=False) inside it (its matmul runs in float32), and a region inside the no_grad
  // block: both nested.
  EXPECT_FALSE(regions[1].enabled);
  EXPECT_EQ(regions[1].body_nodes.back(), "matmul");
  EXPECT_EQ(regions[1].depth, 1);
  EXPECT_TRUE(regions[2].enabled);
  EXPECT_EQ(regions[2].depth, 1);
  EXPECT_EQ(regions[2].body_nodes.back(), "mm");
  // run_decompositions() writes autocast's casts into the graph: no region is left.
  EXPECT_TRUE(autocast_regions(load("autocast_regions_core").program.ir.graph).empty());
}

TEST(AutocastRegions, AnInlinedRegionRunsBitForBitAsTheRegion) {
  Loaded f = load("autocast_regions");
  const Graph& g = f.program.ir.graph;
  const AutocastRegion outer = autocast_regions(g).front();
  NodeId region = kGraphInput;
  for (const Node& n : g.nodes())
    if (n.name == outer.node) region = n.id;
  ASSERT_NE(region, kGraphInput);
  std::string why;
  std::optional<ExportedGraph> inlined = inline_autocast_region(f.program.ir, region, why);
  ASSERT_TRUE(inlined) << why;
  Program p = f.program;
  p.ir = std::move(*inlined);
  // The body's nodes are top-level nodes now, each tagged with the region's autocast; the nested regions
  // (autocast off inside it) stay regions.
  size_t tagged = 0;
  for (const Node& n : p.ir.graph.nodes()) {
    EXPECT_NE(n.name, outer.node);
    if (n.metadata.count(kAutocastMetadata)) {
      ++tagged;
      EXPECT_EQ(n.metadata.at(kAutocastMetadata), "cpu,bfloat16,1,0") << n.name;  // export records cache_enabled=False
      EXPECT_EQ(n.metadata.at(kInlinedFromMetadata), outer.node);
    }
  }
  EXPECT_EQ(tagged, outer.body_nodes.size());
  EXPECT_EQ(p.ir.graph.nodes().size(), g.nodes().size() - 1 + outer.body_nodes.size());
  EXPECT_EQ(autocast_regions(p.ir.graph).size(), autocast_regions(g).size() - 1);
  // Native: every op under the same autocast, so the same bits; fp64: the same float64 values, the casts
  // ignored and said so.
  Interpreter as_region(f.program), as_ops(p);
  RunResult a = as_region.run(f.inputs), b = as_ops.run(f.inputs);
  RunOptions fp64;
  fp64.precision = Precision::Fp64;
  RunResult a64 = as_region.run(f.inputs, fp64), b64 = as_ops.run(f.inputs, fp64);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (!a.outputs[i].isTensor()) continue;
    EXPECT_TRUE(at::equal(a.outputs[i].toTensor(), b.outputs[i].toTensor())) << "output " << i;
    EXPECT_TRUE(at::equal(a64.outputs[i].toTensor(), b64.outputs[i].toTensor())) << "fp64 output " << i;
  }
  EXPECT_NE(std::find(b64.fixups.begin(), b64.fixups.end(), "wrap_with_autocast: autocast to bfloat16 ignored (the body runs in float64)"),
            b64.fixups.end());
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU)) << "the run left autocast on";
  // A node that is not an autocast region is refused, with the reason.
  for (const Node& n : g.nodes())
    if (n.target != "torch.ops.higher_order.wrap_with_autocast") {
      EXPECT_FALSE(inline_autocast_region(f.program.ir, n.id, why)) << n.name;
      EXPECT_EQ(why, "not a wrap_with_autocast node");
      break;
    }
}

TEST(AutocastRegions, NativeRunCastsByAutocastAndRestoresIt) {
  Loaded f = load("autocast_regions");
  Interpreter interpreter(f.program);
  RunResult native = interpreter.run(f.inputs);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU)) << "the run left autocast on";
  // The same graph with autocast ignored (the widened run computes every body op in float32) gives other
  // numbers: bit-exactness with eager (interpreter_test.cpp) holds because the native run autocasts.
  const RegionSpec whole = RegionSpec::whole_graph(f.program.ir);
  std::vector<c10::IValue> frame = graph_input_values(f.program, f.inputs), in;
  for (ValueId v : whole.inputs) in.push_back(frame.at(static_cast<size_t>(v)));
  RunOptions widened;
  widened.precision = Precision::Widened;
  std::vector<c10::IValue> wide = interpreter.run_region(whole, in, widened);
  ASSERT_EQ(wide.size(), native.outputs.size());
  EXPECT_FALSE(at::equal(wide[0].toTensor(), native.outputs[0].toTensor()));
  EXPECT_FALSE(at::equal(wide[2].toTensor(), native.outputs[2].toTensor()));
  // The fp64 run keeps float64 inside the regions and says so.
  RunOptions fp64;
  fp64.precision = Precision::Fp64;
  RunResult ref = interpreter.run(f.inputs, fp64);
  EXPECT_NE(std::find(ref.fixups.begin(), ref.fixups.end(), "wrap_with_autocast: autocast to bfloat16 ignored (the body runs in float64)"),
            ref.fixups.end()) << ::testing::PrintToString(ref.fixups);
  EXPECT_TRUE(native.fixups.empty());
}

TEST(AutocastRegions, InspectNamesThemAndTheirNodes) {
  Loaded f = load("autocast_regions");
  InspectReport r = inspect(f.program);
  ASSERT_EQ(r.autocast.size(), 3u);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("autocast regions (3)"), std::string::npos) << text;
  EXPECT_NE(text.find("wrap_with_autocast: autocast cpu bfloat16, 6 nodes: linear, gelu, matmul, transpose"), std::string::npos) << text;
  EXPECT_NE(text.find("autocast off on cpu"), std::string::npos) << text;
  EXPECT_NE(to_json(r).find("\"body_nodes\""), std::string::npos);
  EXPECT_EQ(to_text(inspect(load("mlp").program)).find("autocast regions"), std::string::npos);
}

TEST(AutocastRegions, TheReportAndTheDtypeHintAccountForThem) {
  Loaded f = load("autocast_regions");
  DiffOptions o;
  o.compiled = "eager";
  DiffResult r = diff(f.program, f.inputs, o);
  ASSERT_EQ(r.autocast.size(), 3u);
  EXPECT_EQ(r.autocast[0].node, "wrap_with_autocast");
  const std::string text = to_text(r);
  EXPECT_NE(text.find("autocast regions (3): eager ran these bodies under autocast"), std::string::npos) << text;
  EXPECT_NE(to_json(r).find("\"autocast\": ["), std::string::npos);
  // The region's inputs and output are float32; the hint still treats it as low precision and names it.
  std::vector<Hint> hints = explain(f.program, f.inputs, "wrap_with_autocast", o);
  auto h = std::find_if(hints.begin(), hints.end(), [](const Hint& x) { return x.kind == "dtype_promotion"; });
  ASSERT_NE(h, hints.end());
  const std::string note = "wrap_with_autocast: autocast cpu bfloat16 over 6 nodes";
  EXPECT_TRUE(std::any_of(h->notes.begin(), h->notes.end(), [&](const std::string& n) { return n.rfind(note, 0) == 0; }))
      << ::testing::PrintToString(h->notes);
}

TEST(GradRegions, RunTheirBodies) {
  Loaded f = load("grad_regions");
  size_t hops = 0;
  for (const Node& n : f.program.ir.graph.nodes()) hops += n.target == "torch.ops.higher_order.wrap_with_set_grad_enabled";
  EXPECT_EQ(hops, 1u);  // the no_grad rotary table (enable_grad under autograd leaves no node)
  Loaded s = load("invoke_subgraph");
  size_t calls = 0;
  for (const Node& n : s.program.ir.graph.nodes()) calls += n.target == "torch.ops.higher_order.invoke_subgraph";
  EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace pt2diff
