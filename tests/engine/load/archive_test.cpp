// tests/engine/load/archive_test.cpp — every fixture loads and matches what Python's torch.export.load
// sees (fixtures/expected_graphs.json, written by make_fixtures.py): nodes, signature, weights bit
// for bit, shared storages.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../../test_support.h"
#include "graphs/dag.h"
#include "engine/load/torch_compat.h"
#include "pt2diff/error.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

using testing::fixture;

const nlohmann::json& expected() {
  static const nlohmann::json j = nlohmann::json::parse(std::ifstream(fixture("expected_graphs.json")));
  return j;
}

std::string fnv1a(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class EveryFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFixture, MatchesPythonsViewOfTheArchive) {
  const std::string name = GetParam();
  const nlohmann::json& want = expected().at(name);
  Program p = load_program(fixture(name + ".pt2"));
  const Graph& g = p.ir.graph;
  EXPECT_EQ(p.ir.schema_major, 8);

  // Nodes: same names, same ops, same order (getitem is not a node in the archive).
  ASSERT_EQ(g.nodes().size(), want["nodes"].size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    std::string py_name = want["nodes"][i][0], py_target = want["nodes"][i][1];
    EXPECT_EQ(n.name, py_name);
    EXPECT_TRUE(ends_with(n.target, py_target)) << n.target << " vs " << py_target;
  }

  // Signature: user inputs and outputs by name. Python keeps a specialized scalar as a user input;
  // the archive stores it as a constant_input under the same name.
  std::vector<std::string> user_inputs, outputs;
  for (const InputSpec& s : p.ir.input_specs) {
    if (s.kind == InputSpec::Kind::UserInput) user_inputs.push_back(g.value(s.arg.values().front()).name);
    if (s.kind == InputSpec::Kind::ConstantInput) user_inputs.push_back(s.target);
  }
  for (const OutputSpec& s : p.ir.output_specs) outputs.push_back(g.value(s.arg.values().front()).name);
  EXPECT_EQ(user_inputs, want["user_inputs"].get<std::vector<std::string>>());
  EXPECT_EQ(outputs, want["outputs"].get<std::vector<std::string>>());

  // Weights and constants: dtype, shape, storage offset and every byte.
  ASSERT_EQ(p.state.size(), want["state"].size());
  for (const auto& [fqn, w] : want["state"].items()) {
    ASSERT_TRUE(p.state.count(fqn)) << fqn;
    const at::Tensor& t = p.state.at(fqn);
    EXPECT_EQ(std::string(dtype_name(static_cast<DType>(t.scalar_type()))), w["dtype"].get<std::string>()) << fqn;
    EXPECT_EQ(t.sizes().vec(), w["shape"].get<std::vector<int64_t>>()) << fqn;
    EXPECT_EQ(t.storage_offset(), w["offset"].get<int64_t>()) << fqn;
    EXPECT_EQ(fnv1a(t), w["fnv1a"].get<std::string>()) << fqn;
  }
  // Entries that share a storage in Python share it here.
  for (const auto& group : want["shared_storages"]) {
    const void* first = p.state.at(group[0].get<std::string>()).storage().unsafeGetStorageImpl();
    for (const auto& fqn : group) EXPECT_EQ(p.state.at(fqn.get<std::string>()).storage().unsafeGetStorageImpl(), first) << fqn;
  }
  // Every node carries its source line (but the region ops export writes for no_grad/autocast blocks,
  // which torch records without one); the DAG view agrees with the archive's order.
  for (const Node& n : g.nodes()) {
    if (n.target.rfind("torch.ops.higher_order.wrap_with_", 0) != 0) {
      EXPECT_FALSE(n.source.stack_trace.empty()) << n.name;
    }
  }
  EXPECT_EQ(Dag(g).topological_order().size(), g.nodes().size());
  EXPECT_TRUE(p.sample_inputs.has_value());
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : expected().items()) names.push_back(name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EveryFixture, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

// Archives written by torch 2.11, 2.12 and 2.14: tests/engine/load/torch_versions_test.cpp.

TEST(Archive, AFloatListsArgumentIsReadOrRefusedByName) {
  // Argument.as_float_lists: in the export schema since torch 2.12 (fixtures/make_float_lists_fixture.py).
#if PT2DIFF_SCHEMA_HAS_FLOAT_LISTS
  Program p = load_program(fixture("variants/float_lists.pt2"));
  const Node& row_scale = p.ir.graph.nodes().front();
  EXPECT_EQ(row_scale.target, "torch.ops.pt2diff_fixtures.row_scale.default");
  ASSERT_EQ(row_scale.inputs.at(1).arg.kind, Argument::Kind::FloatLists);
  EXPECT_EQ(row_scale.inputs.at(1).arg.as<std::vector<std::vector<double>>>(),
            (std::vector<std::vector<double>>{{1.0, 2.0}, {0.5, 4.0}}));
#else
  try {
    load_program(fixture("variants/float_lists.pt2"));
    FAIL() << "a torch without as_float_lists read an archive using it";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the graph uses 'as_float_lists', written by torch 2.12 and later, which the torch " +
                                         std::string(PT2DIFF_LINKED_TORCH_VERSION) + " pt2diff was built against cannot represent"),
              std::string::npos) << e.what();
  }
#endif
}

TEST(Archive, KeepsSourceInfoUsersKnow) {
  Program p = load_program(fixture("mlp.pt2"));
  const Node& first = p.ir.graph.nodes().front();
  EXPECT_EQ(first.name, "linear");
  EXPECT_NE(first.source.user_frame().find("make_fixtures.py:"), std::string::npos) << first.source.user_frame();
  EXPECT_NE(first.source.user_frame().find("self.fc1(x)"), std::string::npos) << first.source.user_frame();
  EXPECT_EQ(first.source.module_path(), "fc1");
  EXPECT_EQ(first.source.nn_module_stack.back().type, "torch.nn.modules.linear.Linear");
}

TEST(Archive, ReadsEveryArgumentKindTheFixturesUse) {
  Program multi = load_program(fixture("multi_output_core.pt2"));
  const Node& max = multi.ir.graph.nodes()[0];
  EXPECT_EQ(max.target, "torch.ops.aten.max.dim");
  EXPECT_EQ(max.outputs.size(), 2u);  // one as_tensor per return
  const Node& split = multi.ir.graph.nodes()[1];
  ASSERT_EQ(split.outputs.size(), 1u);
  EXPECT_EQ(split.outputs[0].kind, Argument::Kind::Tensors);  // Tensor[] is one list
  EXPECT_EQ(split.outputs[0].tensor_values().size(), 3u);
  const Node& ln = multi.ir.graph.nodes()[2];
  EXPECT_EQ(ln.inputs.at(2).arg.kind, Argument::Kind::None);

  Program index = load_program(fixture("index_none.pt2"));
  const Node& idx = index.ir.graph.nodes()[0];
  ASSERT_EQ(idx.inputs.at(1).arg.kind, Argument::Kind::OptionalTensors);
  auto slots = idx.inputs.at(1).arg.as<std::vector<ValueId>>();
  EXPECT_EQ(slots[0], kNoValue);
  EXPECT_EQ(index.ir.graph.value(slots[1]).name, "b_idx");

  Program bf16 = load_program(fixture("bf16_block.pt2"));
  bool saw_dtype = false, saw_keyword_device = false;
  for (const Node& n : bf16.ir.graph.nodes())
    for (const NamedArgument& a : n.inputs) {
      if (a.arg.kind == Argument::Kind::ScalarType && a.arg.as<DType>() == DType::BFloat16) saw_dtype = true;
      if (a.keyword && a.arg.kind == Argument::Kind::Device) saw_keyword_device = a.arg.as<Device>().type == "cpu";
    }
  EXPECT_TRUE(saw_dtype);
  EXPECT_TRUE(saw_keyword_device);

  Program temp = load_program(fixture("ln_softmax_gelu.pt2"));
  const InputSpec& constant = temp.ir.input_specs.back();
  EXPECT_EQ(constant.kind, InputSpec::Kind::ConstantInput);
  EXPECT_EQ(constant.target, "temperature");
  EXPECT_EQ(std::get<double>(constant.constant), 0.5);
}

TEST(Archive, ReadsHigherOrderSubgraphs) {
  Program p = load_program(fixture("cond.pt2"));
  const Node* cond = nullptr;
  for (const Node& n : p.ir.graph.nodes())
    if (n.target == "torch.ops.higher_order.cond") cond = &n;
  ASSERT_NE(cond, nullptr);
  auto subs = cond->subgraphs();
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0]->name, "true_graph_0");
  EXPECT_EQ(subs[1]->name, "false_graph_0");
  EXPECT_EQ(subs[0]->graph->nodes().front().target, "torch.ops.aten.cos.default");
  // The branch names its input like the outer value, in its own namespace, with its metadata.
  ValueId in = subs[0]->graph->input_values().front();
  ASSERT_TRUE(subs[0]->graph->value(in).meta.has_value());
  EXPECT_EQ(subs[0]->graph->value(in).meta->dtype, DType::Float);
}

TEST(Archive, ReadsDynamicDimsAndRanges) {
  Program p = load_program(fixture("dynamic_batch.pt2"));
  const Value& x = p.ir.graph.value(p.ir.graph.find("x"));
  ASSERT_TRUE(x.meta.has_value());
  const SymInt& batch = x.meta->sizes[0];
  EXPECT_FALSE(batch.is_static());
  EXPECT_EQ(batch.expr, "s77");
  EXPECT_EQ(batch.hint, 6);
  ASSERT_EQ(p.ir.range_constraints.count("s77"), 1u);
  EXPECT_EQ(p.ir.range_constraints.at("s77").min, 2);
  EXPECT_EQ(p.ir.range_constraints.at("s77").max, 64);
}

TEST(Archive, CountsSharedStoragesOnce) {
  Program p = load_program(fixture("index_none.pt2"));
  // idx (4 int64) + table (16 float32, shared with its view 'row').
  EXPECT_EQ(p.weight_bytes(), 4 * 8 + 16 * 4);
}

}  // namespace
}  // namespace pt2diff

namespace pt2diff {
namespace {

TEST(ArchiveVariants, ReadsPickledWeights) {
  // fc1.weight stored as a torch.save blob (use_pickle: true) must equal the raw-record original.
  Program pickled = load_program(testing::fixture("variants/pickled_weight.pt2"));
  Program raw = load_program(testing::fixture("mlp.pt2"));
  EXPECT_EQ(fnv1a(pickled.state.at("fc1.weight")), fnv1a(raw.state.at("fc1.weight")));
  EXPECT_EQ(pickled.state.at("fc1.weight").sizes(), raw.state.at("fc1.weight").sizes());
}

TEST(ArchiveVariants, NeverNeedsTheOutputPytree) {
  // The out_spec names transformers.modeling_outputs.BaseModelOutput; Python's torch.export.load
  // would need transformers installed, pt2diff does not read the pytree at all.
  Program p = load_program(testing::fixture("variants/python_class_outputs.pt2"));
  EXPECT_EQ(p.ir.output_specs.size(), 1u);
  EXPECT_EQ(p.ir.graph.nodes().size(), 3u);
}

}  // namespace
}  // namespace pt2diff
