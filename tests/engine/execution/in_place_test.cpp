// tests/engine/execution/in_place_test.cpp — in-place ATen ops kept by training IR
// (fixtures/make_in_place_fixture.py). A write into a fresh intermediate only the writing op reads is its
// functional form for per-op inputs: the exploded compile and localization run through it, and a fault
// planted before, on or after such ops is localized to its node. A write another node can see (into a
// view of a value read afterwards, into a graph input) is followed by the storage model (mutation_test.cpp).
#include <gtest/gtest.h>

#include <ATen/ops/equal.h>

#include "../../test_support.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {
namespace {

using testing::fixture;

std::string archive(const std::string& name) { return fixture(name + ".pt2") + " " + fixture(name + "_inputs.pt"); }

TEST(InPlace, ConfinedWritesAndSeenOnesAreTold) {
  Program confined = load_program(fixture("in_place_confined.pt2"));
  Interpreter c(confined);
  EXPECT_TRUE(c.mutates_inputs());  // relu_, hardswish_, dropout_, add_, relu__1
  EXPECT_EQ(c.unconfined_mutations(), std::vector<std::string>{});
  Program seen = load_program(fixture("in_place_seen.pt2"));
  Interpreter s(seen);
  // relu_ writes a slice of linear, which mul reads; tanh_ writes the graph input x.
  EXPECT_EQ(s.unconfined_mutations(), (std::vector<std::string>{"relu_", "tanh_"}));
}

TEST(InPlace, ConfinedRunIsBitExactAgainstPythonEager) {
  Program p = load_program(fixture("in_place_confined.pt2"));
  Interpreter interpreter(p);
  RunResult native = interpreter.run(bind_inputs(p, load_inputs(fixture("in_place_confined_inputs.pt"))));
  UserInputs expected = load_inputs(testing::eager_outputs("in_place_confined"));
  ASSERT_EQ(native.outputs.size(), expected.args.size());
  for (size_t i = 0; i < native.outputs.size(); ++i)
    EXPECT_TRUE(at::equal(native.outputs[i].toTensor(), std::get<at::Tensor>(expected.args[i]))) << "output " << i;
}

TEST(InPlace, FaultsAroundConfinedWritesAreLocalized) {
  // Before the chain (linear_1, which hardswish_ then dropout_ write), on an in-place op, on the
  // value add_ writes, and after every write: each localized to its own node, with no warning. A
  // kept value changed by a later write would move the culprit (or find none).
  for (const std::string node : {"linear_1", "hardswish_", "linear_2", "add_", "linear_3"}) {
    auto r = testing::run_cli(archive("in_place_confined") + " --compiled fault:" + node + ":scale=0.05");
    EXPECT_EQ(r.exit_code, 1) << node << ": " << r.err;
    EXPECT_NE(r.out.find("single_op: " + node + " "), std::string::npos) << node << ": " << r.out;
    EXPECT_EQ(r.out.find("warning:"), std::string::npos) << node << ": " << r.out;
  }
  auto clean = testing::run_cli(archive("in_place_confined") + " --compiled eager");
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
}

}  // namespace
}  // namespace pt2diff
