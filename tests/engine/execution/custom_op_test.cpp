// tests/engine/execution/custom_op_test.cpp — custom ops that mutate their inputs, from a C++ library
// (tests/custom_ops/mutating_ops.cpp): called directly (training IR) and through auto_functionalized_v2
// (core ATen, one of them on a slice), the native run is bit-exact against Python eager and the fp64 run
// matches Python's fp64 run (fixtures/make_custom_op_fixture.py); without the library, they are named
// before anything runs.
#include <gtest/gtest.h>

#include <ATen/ops/equal.h>
#include <cmath>

#include "../../test_support.h"
#include "../numerics.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {
namespace {

using testing::fixture;
using testing::relative_error;

TEST(CustomOps, UnloadedLibraryIsNamedBeforeRunning) {
  Program p = load_program(fixture("mutating_custom_op_core.pt2"));
  try {
    Interpreter interpreter(p);
    ADD_FAILURE() << "planned a graph whose custom ops are not loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("pt2diff_test.scale_.default"), std::string::npos) << m;
    EXPECT_NE(m.find("--load-library"), std::string::npos) << m;
  }
}

TEST(CustomOps, MutatingOpsAndAutoFunctionalizedMatchPython) {
  load_op_library(PT2DIFF_TEST_OPS);
  for (const std::string name : {"mutating_custom_op", "mutating_custom_op_core"}) {
    Program p = load_program(fixture(name + ".pt2"));
    Interpreter interpreter(p);
    BoundInputs in = bind_inputs(p, load_inputs(fixture("mutating_custom_op_inputs.pt")));
    RunResult native = interpreter.run(in);
    UserInputs expected = load_inputs(testing::eager_outputs(name, PT2DIFF_TEST_OPS));
    ASSERT_EQ(native.outputs.size(), expected.args.size()) << name;
    for (size_t i = 0; i < native.outputs.size(); ++i)
      EXPECT_TRUE(at::equal(native.outputs[i].toTensor(), std::get<at::Tensor>(expected.args[i]))) << name << " output " << i;
    RunOptions fp64;
    fp64.precision = Precision::Fp64;
    RunResult reference = interpreter.run(in, fp64);
    UserInputs expected64 = load_inputs(fixture(name + "_fp64_expected.pt"));
    for (size_t i = 0; i < reference.outputs.size(); ++i) {
      const at::Tensor want = std::get<at::Tensor>(expected64.args[i]);
      ASSERT_EQ(reference.outputs[i].toTensor().scalar_type(), at::kDouble) << name;
      EXPECT_LE(relative_error(reference.outputs[i].toTensor(), want), 1e-12) << name << " output " << i;
    }
  }
}

TEST(CustomOps, TheMainJobRunsThemWithTheLibraryLoaded) {
  auto r = testing::run_cli(fixture("mutating_custom_op_core.pt2") + " " + fixture("mutating_custom_op_inputs.pt") +
                            " --compiled eager --load-library " + PT2DIFF_TEST_OPS);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("AGREE"), std::string::npos) << r.out;
  // In place (training IR): the write followed (storage model), localized to the writing node.
  auto in_place = testing::run_cli(fixture("mutating_custom_op.pt2") + " " + fixture("mutating_custom_op_inputs.pt") +
                                   " --compiled fault:scale_sum_:scale=0.05 --load-library " + PT2DIFF_TEST_OPS);
  EXPECT_EQ(in_place.exit_code, 1) << in_place.err;
  EXPECT_NE(in_place.out.find("single_op: scale_sum_ "), std::string::npos) << in_place.out;
  // Functional (core ATen, auto_functionalized_v2): localized to the planted node.
  auto functional = testing::run_cli(fixture("mutating_custom_op_core.pt2") + " " + fixture("mutating_custom_op_inputs.pt") +
                                     " --compiled fault:auto_functionalized_v2_2:scale=0.05 --load-library " + PT2DIFF_TEST_OPS);
  EXPECT_EQ(functional.exit_code, 1) << functional.err;
  EXPECT_NE(functional.out.find("single_op: auto_functionalized_v2_2"), std::string::npos) << functional.out;
  auto missing = testing::run_cli(fixture("mutating_custom_op_core.pt2") + " --compiled eager --load-library /nonexistent.so");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--load-library /nonexistent.so: no such file"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace pt2diff
