// bench/loader_bench.cpp — time to load archives, read inputs, bind them and build the inspect report.
#include <benchmark/benchmark.h>

#include "pt2diff/inspect.h"
#include "pt2diff/program.h"

namespace {

std::string fixture(const char* name) { return std::string(PT2DIFF_FIXTURES) + "/" + name; }

void BM_LoadProgram(benchmark::State& state, const char* name) {
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::load_program(fixture(name)));
}
BENCHMARK_CAPTURE(BM_LoadProgram, mlp, "mlp.pt2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadProgram, attention_core, "attention_core.pt2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LoadProgram, torch211_toy_core, "torch-2.11/toy_core.pt2")->Unit(benchmark::kMillisecond);

void BM_LoadAndBindInputs(benchmark::State& state) {
  pt2diff::Program p = pt2diff::load_program(fixture("attention_core.pt2"));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::bind_inputs(p, pt2diff::load_inputs(fixture("attention_inputs.pt"))));
}
BENCHMARK(BM_LoadAndBindInputs)->Unit(benchmark::kMicrosecond);

void BM_Inspect(benchmark::State& state) {
  pt2diff::Program p = pt2diff::load_program(fixture("attention_core.pt2"));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::to_text(pt2diff::inspect(p)));
}
BENCHMARK(BM_Inspect)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
