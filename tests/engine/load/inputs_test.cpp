// tests/engine/load/inputs_test.cpp — reading torch.save inputs and binding them to the signature.
#include <gtest/gtest.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include "../../test_support.h"
#include "pt2diff/error.h"
#include "pt2diff/program.h"

namespace pt2diff {
namespace {

using testing::fixture;

std::string bind_error(const Program& p, const UserInputs& in) {
  try {
    bind_inputs(p, in);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::BadInputs);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Inputs, PositionalTupleBindsInSignatureOrder) {
  Program p = load_program(fixture("mlp.pt2"));
  UserInputs in = load_inputs(fixture("mlp_inputs.pt"));
  ASSERT_EQ(in.args.size(), 1u);
  BoundInputs b = bind_inputs(p, in);
  ASSERT_EQ(b.entries.size(), 1u);
  EXPECT_EQ(b.entries[0].name, "x");
  // The same tensor Python saved as the archive's sample input.
  EXPECT_TRUE(at::equal(std::get<at::Tensor>(b.entries[0].value), std::get<at::Tensor>(p.sample_inputs->args[0])));
}

TEST(Inputs, DictBindsByNameAndMixesWithKeywordOnlyArguments) {
  Program p = load_program(fixture("attention.pt2"));
  UserInputs in = load_inputs(fixture("attention_inputs.pt"));  // {"x": ..., "mask": ...}
  EXPECT_TRUE(in.args.empty());
  ASSERT_EQ(in.kwargs.size(), 2u);
  BoundInputs b = bind_inputs(p, in);
  EXPECT_EQ(b.entries[0].name, "x");
  EXPECT_EQ(b.entries[1].name, "mask");
  // Positional then keyword, as the signature says.
  UserInputs mixed;
  mixed.origin = "mixed";
  mixed.args.push_back(std::get<at::Tensor>(in.kwargs[0].second));
  mixed.kwargs.emplace_back("mask", in.kwargs[1].second);
  EXPECT_EQ(bind_inputs(p, mixed).entries.size(), 2u);
  mixed.kwargs.emplace_back("x", in.kwargs[0].second);
  EXPECT_HAS(bind_error(p, mixed), "input 'x' twice");
}

TEST(Inputs, SampleInputsUseTheArgsKwargsPair) {
  Program p = load_program(fixture("attention.pt2"));
  ASSERT_TRUE(p.sample_inputs.has_value());
  EXPECT_EQ(p.sample_inputs->args.size(), 1u);
  EXPECT_EQ(p.sample_inputs->kwargs.size(), 1u);
  EXPECT_EQ(bind_inputs(p, *p.sample_inputs).entries.size(), 2u);
}

TEST(Inputs, EachMismatchIsOneClearError) {
  Program p = load_program(fixture("mlp.pt2"));
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_two.pt"))), "gives 2 positional inputs but the graph takes 1 input (x)");
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_float64.pt"))), "input 'x' has dtype float64, the graph was exported with float32");
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_shape.pt"))), "input 'x' has shape [4, 31], the graph expects float32[4, 32]");
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_wrong_name.pt"))), "gives input 'y', which is not an input of the graph");
  UserInputs none;
  none.origin = "nothing";
  EXPECT_HAS(bind_error(p, none), "gives no value for input 'x'");
  UserInputs scalar;
  scalar.origin = "scalar";
  scalar.args.push_back(int64_t{3});
  EXPECT_HAS(bind_error(p, scalar), "input 'x' must be a tensor (float32[4, 32] cpu), got int 3");
}

TEST(Inputs, AGraphExportedOnCudaTakesCpuInputs) {
  Program p = load_program(fixture("cuda/attention_cuda_fp32.pt2"));
  EXPECT_EQ(p.export_device.str(), "cuda:0");
  EXPECT_EQ(load_program(fixture("mlp.pt2")).export_device.str(), "cpu");
  EXPECT_EQ(bind_inputs(p, load_inputs(fixture("cuda/attention_cuda_fp32_inputs.pt"))).entries.size(), 1u);
  // Saved from GPU tensors (torch.save of cuda:0 tensors on the H200): they load on the CPU.
  UserInputs saved_on_gpu = load_inputs(fixture("cuda/attention_cuda_fp32_inputs_saved_on_cuda.pt"));
  const at::Tensor& x = std::get<at::Tensor>(saved_on_gpu.args.at(0));
  EXPECT_TRUE(x.device().is_cpu());
  EXPECT_TRUE(x.equal(std::get<at::Tensor>(load_inputs(fixture("cuda/attention_cuda_fp32_inputs.pt")).args.at(0))));
  // The archive's own sample inputs were saved on cuda:0 too.
  ASSERT_TRUE(p.sample_inputs.has_value());
  EXPECT_TRUE(std::get<at::Tensor>(p.sample_inputs->args.at(0)).device().is_cpu());
}

TEST(Inputs, ATensorOffTheCpuIsRefused) {
  Program p = load_program(fixture("mlp.pt2"));
  UserInputs in;
  in.origin = "meta";
  in.args.push_back(at::empty({4, 32}, at::TensorOptions().device(at::kMeta)));
  EXPECT_HAS(bind_error(p, in), "input 'x' is on meta: pt2diff runs graphs on the CPU or a CUDA GPU");
}

TEST(Inputs, DynamicDimsAreCheckedAgainstTheirRange) {
  Program p = load_program(fixture("dynamic_batch.pt2"));
  UserInputs in;
  in.origin = "t";
  in.args.push_back(at::randn({17, 16}));
  BoundInputs b = bind_inputs(p, in);  // any batch in [2, 64]
  EXPECT_EQ(b.symbols.at("s77"), 17);
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_batch_100.pt"))),
             "input 'x' dim 0 is 100, outside the range [2, 64] the graph was exported for (symbol s77)");
  in.args[0] = at::randn({1, 16});
  EXPECT_HAS(bind_error(p, in), "dim 0 is 1, outside the range [2, 64]");
  in.args[0] = at::randn({8, 15});
  EXPECT_HAS(bind_error(p, in), "dim 1 is static");
}

TEST(Inputs, SpecializedPythonScalarsMustMatch) {
  Program p = load_program(fixture("ln_softmax_gelu.pt2"));
  EXPECT_EQ(bind_inputs(p, load_inputs(fixture("ln_softmax_gelu_inputs.pt"))).entries.size(), 2u);
  EXPECT_HAS(bind_error(p, load_inputs(fixture("malformed/inputs_temperature.pt"))),
             "input 'temperature' is float 0.7, but the export specialized it to 0.5");
}

TEST(Inputs, RandomInputsFollowTheMetadataAndTheSeed) {
  for (const char* name : {"mlp.pt2", "attention_core.pt2", "bf16_block.pt2", "index_none.pt2", "dynamic_batch.pt2",
                           "ln_softmax_gelu.pt2", "cond.pt2", "multi_output.pt2", "conv_bn_relu.pt2"}) {
    Program p = load_program(fixture(name));
    UserInputs a = random_inputs(p, 7), b = random_inputs(p, 7), c = random_inputs(p, 8);
    EXPECT_NO_THROW(bind_inputs(p, a)) << name;
    const at::Tensor& ta = std::get<at::Tensor>(a.args[0]);
    EXPECT_TRUE(at::equal(ta, std::get<at::Tensor>(b.args[0]))) << name;
    EXPECT_FALSE(at::equal(ta, std::get<at::Tensor>(c.args[0]))) << name;
  }
}

TEST(Inputs, UnreadableFilesSayHowToResave) {
  auto error = [](const std::string& file) {
    try {
      load_inputs(fixture(file));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::BadInputs);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_HAS(error("malformed/inputs_torch_size.pt"), "save tuple(size) instead");
  EXPECT_HAS(error("malformed/inputs_namedtuple.pt"), "save tuple(value) instead");
  EXPECT_HAS(error("malformed/inputs_ordereddict.pt"), "save dict(value) instead");
  EXPECT_HAS(error("malformed/inputs_float8.pt"), "save t.to(torch.float32)");
  EXPECT_HAS(error("malformed/inputs_legacy.pt"), "not a zip-format torch.save file");
  EXPECT_HAS(error("malformed/inputs_nested.pt"), "input #0 is a dict: nested containers are not graph inputs");
  EXPECT_HAS(error("malformed/empty.pt2"), "empty file");
  EXPECT_HAS(error("mlp.pt2"), "a zip without data.pkl");
  EXPECT_HAS(error("no_such_inputs.pt"), "no such file");
}

TEST(Inputs, ViewsOfOneStorageStayViews) {
  // torch.save keeps aliasing; so must we (inputs that alias each other behave differently).
  Program p = load_program(fixture("torch-2.11/toy.pt2"));
  UserInputs in = load_inputs(fixture("toy_aliased_inputs.pt"));  // (base[:8], base[8:])
  BoundInputs b = bind_inputs(p, in);
  const at::Tensor& x = std::get<at::Tensor>(b.entries[0].value);
  const at::Tensor& y = std::get<at::Tensor>(b.entries[1].value);
  EXPECT_EQ(x.storage().unsafeGetStorageImpl(), y.storage().unsafeGetStorageImpl());
  EXPECT_EQ(y.storage_offset(), 8 * 64);
}

}  // namespace
}  // namespace pt2diff
