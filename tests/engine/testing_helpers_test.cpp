// tests/engine/testing_helpers_test.cpp — pt2diff/testing.h: the assertion passes on agreement and
// fails with a message naming the culprit op, its source line, the hint and the numbers.
#include "pt2diff/testing.h"

#include "../test_support.h"

namespace pt2diff {
namespace {

using testing::fixture;

TEST(AgreesWithReference, PassesWhenTheCompiledSideAgrees) {
  DiffOptions o;
  o.compiled = "eager";
  const ::testing::AssertionResult r = agrees_with_reference(fixture("mlp.pt2"), fixture("mlp_inputs.pt"), o);
  EXPECT_TRUE(r);
  EXPECT_NE(std::string(r.message()).find("agrees: 1 output of"), std::string::npos) << r.message();
}

TEST(AgreesWithReference, FailsNamingTheOpItsSourceLineAndTheHint) {
  DiffOptions o;
  o.compiled = "fault:aten.bmm#2:bf16";
  const Program program = load_program(fixture("attention_core.pt2"));
  const ::testing::AssertionResult r =
      agrees_with_reference(program, bind_inputs(program, load_inputs(fixture("attention_inputs.pt"))), o);
  ASSERT_FALSE(r);
  const std::string m = r.message();
  for (const char* expected : {"the compiled graph does not agree with the reference", "output add_1 diverges (rmse_exceeds_bound)",
                               "culprit (single_op", "bmm_1 (aten.bmm.default) at make_fixtures.py:",
                               "hint dtype_promotion (lower_precision_than_promotion)", "compiled RMSE to fp64"})
    EXPECT_NE(m.find(expected), std::string::npos) << expected << "\n" << m;
}

TEST(AgreesWithReference, BadInputFailsTheAssertionWithOneLine) {
  const ::testing::AssertionResult missing = agrees_with_reference(fixture("nosuch.pt2"), fixture("mlp_inputs.pt"));
  ASSERT_FALSE(missing);
  EXPECT_NE(std::string(missing.message()).find("pt2diff: "), std::string::npos);
  EXPECT_NE(std::string(missing.message()).find("nosuch.pt2"), std::string::npos) << missing.message();
  DiffOptions o;
  o.compiled = "eager";
  const ::testing::AssertionResult wrong = agrees_with_reference(fixture("mlp.pt2"), fixture("attention_inputs.pt"), o);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(std::string(wrong.message()).find('\n'), std::string::npos) << wrong.message();
}

}  // namespace
}  // namespace pt2diff
