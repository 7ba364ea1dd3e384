// tests/engine/load/torch_versions_test.cpp — archives written by each torch pt2diff builds against (2.11,
// 2.12, 2.14: fixtures/torch-*/, made by fixtures/make_version_fixtures.py from one module) load
// under whichever torch this build links, `pt2diff inspect` reads them with their inputs, and their
// native run is bit for bit what PyTorch eager gives for the same archive on this machine, now
// (testing::eager_outputs: the build's venv Python, the torch pt2diff is linked with).
#include <gtest/gtest.h>

#include <ATen/ops/sub.h>
#include <cstring>
#include <filesystem>
#include <set>

#include "../../test_support.h"
#include "pt2diff/advanced/interpreter.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

using testing::fixture;
using testing::run_cli;

/// One folder of fixtures/torch-*/ and what its archives say about the torch that wrote them.
struct WrittenBy {
  const char* dir;      ///< fixtures/<dir>/toy.pt2, toy_core.pt2, toy_inputs.pt
  const char* version;  ///< pytorch_version in the archive starts with this
  int schema_minor;     ///< export schema 8.<minor>
};

const WrittenBy kVersions[] = {
    {"torch-2.11", "2.11.0", 17},
    {"torch-2.12", "2.12.0", 20},
    {"torch-2.14", "2.14.1", 20},
};

TEST(TorchVersions, EveryVersionFolderIsTested) {
  std::set<std::string> listed, found;
  for (const WrittenBy& v : kVersions) listed.insert(v.dir);
  for (const auto& entry : std::filesystem::directory_iterator(fixture("")))
    if (entry.is_directory() && entry.path().filename().string().rfind("torch-", 0) == 0)
      found.insert(entry.path().filename().string());
  EXPECT_EQ(found, listed);
}

::testing::AssertionResult bit_equal(const at::Tensor& got, const at::Tensor& want) {
  if (got.scalar_type() != want.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << got.scalar_type() << " vs " << want.scalar_type();
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  at::Tensor a = got.contiguous(), b = want.contiguous();
  if (std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) != 0)
    return ::testing::AssertionFailure() << "values differ; max abs diff "
                                         << at::sub(a.to(at::kDouble), b.to(at::kDouble)).abs().max().item<double>();
  return ::testing::AssertionSuccess();
}

class WrittenByTorch : public ::testing::TestWithParam<WrittenBy> {};

TEST_P(WrittenByTorch, ArchivesLoad) {
  const WrittenBy v = GetParam();
  for (const char* stem : {"/toy.pt2", "/toy_core.pt2"}) {
    Program p = load_program(fixture(v.dir + std::string(stem)));
    EXPECT_EQ(p.ir.torch_version.substr(0, std::strlen(v.version)), v.version) << stem;
    EXPECT_EQ(p.ir.schema_minor, v.schema_minor) << stem;
    EXPECT_EQ(p.state.size(), 4u) << stem;  // lin.weight, lin.bias, ln.weight, ln.bias
    EXPECT_GT(p.ir.graph.nodes().size(), 8u) << stem;
    EXPECT_TRUE(p.sample_inputs.has_value()) << stem;
  }
  // aten.mul.Tensor with a Python float in its Tensor slot (3.0 * h).
  Program p = load_program(fixture(v.dir + std::string("/toy.pt2")));
  bool found = false;
  for (const Node& n : p.ir.graph.nodes())
    if (n.target == "torch.ops.aten.mul.Tensor" && n.inputs.at(1).arg.kind == Argument::Kind::Float) found = true;
  EXPECT_TRUE(found);
}

TEST_P(WrittenByTorch, InspectReadsThemWithTheirInputs) {
  const WrittenBy v = GetParam();
  for (const char* stem : {"/toy", "/toy_core"}) {
    auto r = run_cli("inspect " + fixture(v.dir + std::string(stem) + ".pt2") + " " + fixture(v.dir + std::string("/toy_inputs.pt")));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("written by torch " + std::string(v.version)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("inputs bind: yes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("unsupported ops: none"), std::string::npos) << r.out;
  }
}

TEST_P(WrittenByTorch, NativeRunIsBitExactAgainstEagerOfTheLinkedTorch) {
  const WrittenBy v = GetParam();
  for (const char* stem : {"/toy", "/toy_core"}) {
    const std::string name = v.dir + std::string(stem);
    Program p = load_program(fixture(name + ".pt2"));
    Interpreter interpreter(p);
    RunResult r = interpreter.run(bind_inputs(p, load_inputs(fixture(v.dir + std::string("/toy_inputs.pt")))));
    UserInputs expected = load_inputs(testing::eager_outputs(name));
    ASSERT_EQ(r.outputs.size(), 3u) << name;
    ASSERT_EQ(expected.args.size(), 3u) << name;
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      ASSERT_TRUE(r.outputs[i].isTensor()) << name << " output " << i;
      EXPECT_TRUE(bit_equal(r.outputs[i].toTensor(), std::get<at::Tensor>(expected.args[i]))) << name << " output " << i;
    }
    EXPECT_TRUE(r.not_comparable.empty()) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WrittenByTorch, ::testing::ValuesIn(kVersions), [](const auto& info) {
  std::string n = info.param.dir;  // torch-2.11 -> torch_2_11 (test names are identifiers)
  for (char& c : n)
    if (c == '-' || c == '.') c = '_';
  return n;
});

}  // namespace
}  // namespace pt2diff
