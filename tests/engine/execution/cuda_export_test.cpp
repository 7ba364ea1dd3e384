// tests/engine/execution/cuda_export_test.cpp — graphs exported on a GPU (fixtures/cuda, written on an
// H200 by fixtures/make_cuda_attention.py) run on the CPU: the fp64 run matches the same module run in
// float64 to 1e-12, the native run is as accurate as CUDA eager was, and what had to change (baked
// devices, CUDA-only fused attention) is listed before anything runs.
#include <gtest/gtest.h>

#include <algorithm>

#include "../../test_support.h"
#include "../numerics.h"
#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/error.h"
#include "pt2diff/advanced/interpreter.h"

namespace pt2diff {
namespace {

using testing::fixture;

const std::vector<std::string> kCudaFixtures = {"attention_cuda_fp32", "attention_cuda_bf16", "attention_cuda_masked_fp32"};

at::Tensor expected(const std::string& file) { return std::get<at::Tensor>(load_inputs(fixture("cuda/" + file)).args.at(0)); }

TEST(CudaExport, Fp64RunMatchesTheModuleInFloat64) {
  for (const std::string& name : kCudaFixtures) {
    Program p = load_program(fixture("cuda/" + name + ".pt2"));
    Interpreter interpreter(p);
    RunOptions fp64;
    fp64.precision = Precision::Fp64;
    RunResult r = interpreter.run(bind_inputs(p, load_inputs(fixture("cuda/" + name + "_inputs.pt"))), fp64);
    const at::Tensor out = r.outputs.at(0).toTensor();
    ASSERT_EQ(out.scalar_type(), at::kDouble) << name;
    ASSERT_TRUE(out.device().is_cpu()) << name;
    // The module itself (nn.Linear, F.scaled_dot_product_attention) in float64 on the CPU.
    EXPECT_LE(testing::relative_error(out, expected(name + "_fp64_expected.pt")), 1e-12) << name;
    EXPECT_NE(std::find_if(r.fixups.begin(), r.fixups.end(),
                           [](const std::string& f) { return f.find("CUDA fused kernel -> aten._scaled_dot_product_attention_math") != std::string::npos; }),
              r.fixups.end()) << ::testing::PrintToString(r.fixups);
  }
}

TEST(CudaExport, NativeRunOnTheCpuIsAsAccurateAsCudaEager) {
  for (const std::string& name : kCudaFixtures) {
    Program p = load_program(fixture("cuda/" + name + ".pt2"));
    Interpreter interpreter(p);
    RunResult r = interpreter.run(bind_inputs(p, load_inputs(fixture("cuda/" + name + "_inputs.pt"))));
    const at::Tensor cpu = r.outputs.at(0).toTensor(), cuda = expected(name + "_cuda_expected.pt");
    const at::Tensor truth = expected(name + "_fp64_expected.pt");
    ASSERT_EQ(cpu.scalar_type(), cuda.scalar_type()) << name;
    // Not bit for bit: the fused CUDA kernels reduce over keys in blocks with an online softmax, the CPU
    // runs bmm, softmax, bmm. The fair test is distance to the truth: CPU eager's RMSE to fp64 within
    // the factor 2 that torch._dynamo.utils.same allows a compiled fp32 result against eager's (measured
    // on these fixtures: 1.13x, 0.92x and 1.07x of CUDA eager's RMSE).
    EXPECT_LE(testing::rmse(cpu, truth), 2.0 * testing::rmse(cuda, truth)) << name;
    // And elementwise: a few units in the last place of the output's scale (measured: 4 fp32 ulp, 3 fp32
    // ulp, 1 bf16 ulp); the bound is 4x that for other CPU kernels (AVX2 vs AVX-512 GEMMs).
    const double ulp = cpu.scalar_type() == at::kBFloat16 ? 1.0 / 128 : 1.0 / (1 << 23);  // eps at 1.0
    const double scale = cuda.to(at::kDouble).abs().max().item<double>();
    const double worst = cpu.to(at::kDouble).sub(cuda.to(at::kDouble)).abs().max().item<double>();
    EXPECT_LE(worst, 16 * ulp * scale) << name << ": max |cpu - cuda| " << worst;
  }
}

TEST(CudaExport, DeviceRewritesAreKnownBeforeRunning) {
  Program p = load_program(fixture("cuda/attention_cuda_masked_fp32.pt2"));
  EXPECT_EQ(p.export_device.str(), "cuda:0");
  Interpreter interpreter(p);
  std::vector<std::string> moved, substituted;
  for (const DeviceRewrite& rw : interpreter.device_rewrites()) {
    if (rw.what == "device cuda:0 -> cpu") moved.push_back(rw.node);
    else substituted.push_back(rw.op);
    EXPECT_NE(rw.source.find("make_cuda_attention.py:"), std::string::npos) << rw.node;
  }
  // torch.arange(t, device=x.device), torch.ones(t, t, device=x.device) and the mask's decomposition.
  EXPECT_EQ(moved, (std::vector<std::string>{"arange", "full", "arange_1", "arange_2", "scalar_tensor", "scalar_tensor_1"}));
  EXPECT_EQ(substituted, std::vector<std::string>{"aten._scaled_dot_product_efficient_attention.default"});
  RunOptions fp64;
  fp64.precision = Precision::Fp64;
  RunResult r = interpreter.run(bind_inputs(p, load_inputs(fixture("cuda/attention_cuda_masked_fp32_inputs.pt"))), fp64);
  EXPECT_NE(std::find(r.fixups.begin(), r.fixups.end(), "aten.full.default: device cuda:0 -> cpu"), r.fixups.end())
      << ::testing::PrintToString(r.fixups);
  // A graph exported on the CPU has nothing to rewrite.
  Program cpu = load_program(fixture("attention_core.pt2"));
  EXPECT_TRUE(Interpreter(cpu).device_rewrites().empty());
}

TEST(CudaExport, AGraphReadingLogsumexpIsRefusedBeforeRunning) {
  Program p = load_program(fixture("cuda/attention_cuda_fp32.pt2"));
  // As a training graph would: the fused op's output 1 (logsumexp) is read, here as a graph output.
  p.ir.graph.mutable_value(p.ir.graph.find("_scaled_dot_product_efficient_attention_unused_1")).is_graph_output = true;
  try {
    Interpreter interpreter(p);
    ADD_FAILURE() << "planned a graph that reads the fused attention's logsumexp";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("reads output 1 ('_scaled_dot_product_efficient_attention_unused_1') of the CUDA-only "
                                         "fused attention"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("make_cuda_attention.py:43"), std::string::npos) << e.what();
  }
}

TEST(CudaExport, AnOpWithNoCpuKernelIsNamedBeforeRunning) {
  Program p = load_program(fixture("cuda/attention_cuda_fp32.pt2"));
  // The lower-level CUDA kernel behind efficient attention has no CPU kernel and no substitute.
  for (const Node& n : p.ir.graph.nodes())
    if (n.name == "_scaled_dot_product_efficient_attention")
      const_cast<Node&>(n).target = "torch.ops.aten._efficient_attention_forward.default";
  try {
    Interpreter interpreter(p);
    ADD_FAILURE() << "planned an op with no CPU kernel";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node '_scaled_dot_product_efficient_attention' (aten._efficient_attention_forward.default)"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has no CPU kernel in this libtorch"), std::string::npos) << e.what();
  }
}

TEST(CudaExport, ATestHarnessSummarySaysTheGraphRanOnTheCpu) {
  Program p = load_program(fixture("cuda/attention_cuda_fp32.pt2"));
  DiffOptions o;
  o.compiled = "fault:_scaled_dot_product_efficient_attention:scale=0.05";
  const DiffResult r = diff(p, bind_inputs(p, load_inputs(fixture("cuda/attention_cuda_fp32_inputs.pt"))), o);
  ASSERT_TRUE(r.diverged);
  const std::string summary = to_summary(r);
  EXPECT_NE(summary.find("_scaled_dot_product_efficient_attention (aten._scaled_dot_product_efficient_attention.default) at "
                         "make_cuda_attention.py:43"), std::string::npos) << summary;
  EXPECT_NE(summary.find("warning: the graph was exported on cuda:0"), std::string::npos) << summary;
}

TEST(CudaExport, TheMainJobComparesOnTheCpuAndSaysSo) {
  const std::string graph = fixture("cuda/attention_cuda_masked_fp32.pt2"), inputs = fixture("cuda/attention_cuda_masked_fp32_inputs.pt");
  auto eager = testing::run_cli(graph + " " + inputs + " --compiled eager");
  EXPECT_EQ(eager.exit_code, 0) << eager.err;
  EXPECT_NE(eager.out.find("warning: the graph was exported on cuda:0; pt2diff's eager and fp64 runs are on the CPU"),
            std::string::npos) << eager.out;
  EXPECT_NE(eager.out.find("device cuda:0 -> cpu (arange, full, arange_1, arange_2, scalar_tensor, scalar_tensor_1)"),
            std::string::npos) << eager.out;
  // A planted fault on the attention is localized to it, by name and source line.
  auto fault = testing::run_cli(graph + " " + inputs + " --compiled fault:_scaled_dot_product_efficient_attention:scale=0.05");
  EXPECT_EQ(fault.exit_code, 1) << fault.err;
  EXPECT_NE(fault.out.find("single_op: _scaled_dot_product_efficient_attention"), std::string::npos) << fault.out;
  auto inspect = testing::run_cli("inspect " + graph);
  EXPECT_NE(inspect.out.find("exported on cuda:0: pt2diff runs it on the CPU"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("math attention (CUDA-only op)"), std::string::npos) << inspect.out;
}

}  // namespace
}  // namespace pt2diff
