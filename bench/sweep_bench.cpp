// bench/sweep_bench.cpp — what a 13-point tolerance sweep costs against one plain run of the same graph
// (the sweep re-judges kept values; it should cost about one run). The compiled side is the in-process
// fault backend, so the runs, not a compiler, are measured; with Inductor the compiles (shared by
// both) dominate even more. Figures in docs/performance.md.
#include <benchmark/benchmark.h>

#include "pt2diff/sweep.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"

namespace {

std::string fixture(const std::string& name) { return std::string(PT2DIFF_FIXTURES) + "/" + name; }

struct Case {
  const char* archive;
  const char* inputs;
  const char* fault;
};

const Case kCases[] = {
    {"attention_core.pt2", "attention_inputs.pt", "fault:aten.bmm#2:noise=0.001"},
    {"bf16_block.pt2", "bf16_block_inputs.pt", "fault:matmul:noise=0.01"},
    {"conv_bn_relu_core.pt2", "conv_bn_relu_inputs.pt", "fault:convolution:noise=0.001"},
};

pt2diff::DiffOptions options_for(const Case& c) {
  pt2diff::DiffOptions o;
  o.compiled = c.fault;
  o.localize.enabled = false;
  return o;
}

void BM_PlainRunFault(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  const pt2diff::Program p = pt2diff::load_program(fixture(c.archive));
  const pt2diff::BoundInputs in = pt2diff::bind_inputs(p, pt2diff::load_inputs(fixture(c.inputs)));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::diff(p, in, options_for(c)));
  state.SetLabel(c.archive);
}

void BM_Sweep13Fault(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  const pt2diff::Program p = pt2diff::load_program(fixture(c.archive));
  const pt2diff::BoundInputs in = pt2diff::bind_inputs(p, pt2diff::load_inputs(fixture(c.inputs)));
  pt2diff::SweepOptions o;
  o.diff = options_for(c);
  o.tols = pt2diff::parse_tolerances("1e-7:1e-1:13");
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::sweep(p, in, o));
  state.SetLabel(c.archive);
}

}  // namespace

BENCHMARK(BM_PlainRunFault)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sweep13Fault)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
