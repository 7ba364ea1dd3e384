// The compiled model must agree with eager, fp64 as referee (pt2diff/testing.h). On failure the test
// prints the op that diverges, its source line, the hint and the numbers.
//
// PT2DIFF_COMPILED in the environment picks the compiled side (default: Inductor on CPU), e.g.
// "fault:linear:scale=0.05" to see what a failure looks like.
#include <pt2diff/testing.h>

#include <cstdlib>

namespace {

pt2diff::DiffOptions options() {
  pt2diff::DiffOptions o;  // the same() rule of torch._dynamo at tol 1e-3, as the accuracy minifier uses
  if (const char* spec = std::getenv("PT2DIFF_COMPILED")) o.compiled = spec;
  return o;
}

TEST(ModelAccuracy, CompiledAgreesWithEager) {
  EXPECT_TRUE(pt2diff::agrees_with_reference(MODEL_ARCHIVE, MODEL_INPUTS, options()));
}

TEST(ModelAccuracy, CompiledAgreesOnRandomInputs) {
  // Inputs drawn from the graph's own shapes and dtypes: a second data point for free.
  const pt2diff::Program program = pt2diff::load_program(MODEL_ARCHIVE);
  const pt2diff::BoundInputs inputs = pt2diff::bind_inputs(program, pt2diff::random_inputs(program, /*seed=*/1));
  EXPECT_TRUE(pt2diff::agrees_with_reference(program, inputs, options()));
}

}  // namespace
