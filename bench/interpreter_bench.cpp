// bench/interpreter_bench.cpp — interpreter overhead per node, fp64 and lockstep runs, and the full
// compare pass. Graphs come from bench/make_bench_graphs.py (PT2DIFF_BENCH_GRAPHS) and fixtures/.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "pt2diff/diff.h"
#include "pt2diff/interpreter.h"

namespace {

std::string bench_graph(const std::string& name) {
  const char* dir = std::getenv("PT2DIFF_BENCH_GRAPHS");
  return std::string(dir ? dir : "bench-graphs") + "/" + name;
}
std::string fixture(const std::string& name) { return std::string(PT2DIFF_FIXTURES) + "/" + name; }

struct Loaded {
  pt2diff::Program program;
  pt2diff::BoundInputs inputs;
  explicit Loaded(const std::string& graph, const std::string& inputs_file)
      : program(pt2diff::load_program(graph)), inputs(pt2diff::bind_inputs(program, pt2diff::load_inputs(inputs_file))) {}
};

void run_mode(benchmark::State& state, const std::string& graph, const std::string& inputs, pt2diff::Precision precision) {
  Loaded l(graph, inputs);
  pt2diff::Interpreter interpreter(l.program);
  pt2diff::RunOptions options;
  options.precision = precision;
  for (auto _ : state) benchmark::DoNotOptimize(interpreter.run(l.inputs, options));
  const auto nodes = static_cast<double>(l.program.ir.graph.nodes().size());
  state.counters["us_per_node"] = benchmark::Counter(nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["nodes"] = nodes;
}

void BM_NativeChainTiny(benchmark::State& state) {
  run_mode(state, bench_graph("chain_tiny.pt2"), bench_graph("chain_tiny_inputs.pt"), pt2diff::Precision::Native);
}
BENCHMARK(BM_NativeChainTiny)->Unit(benchmark::kMillisecond);

void BM_Fp64ChainTiny(benchmark::State& state) {
  run_mode(state, bench_graph("chain_tiny.pt2"), bench_graph("chain_tiny_inputs.pt"), pt2diff::Precision::Fp64);
}
BENCHMARK(BM_Fp64ChainTiny)->Unit(benchmark::kMillisecond);

void BM_DiffChainTiny(benchmark::State& state) {
  Loaded l(bench_graph("chain_tiny.pt2"), bench_graph("chain_tiny_inputs.pt"));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::diff(l.program, l.inputs, {}));
  state.counters["nodes"] = static_cast<double>(l.program.ir.graph.nodes().size());
}
BENCHMARK(BM_DiffChainTiny)->Unit(benchmark::kMillisecond);

void BM_DiffLargestFixture(benchmark::State& state) {
  Loaded l(fixture("attention_core.pt2"), fixture("attention_inputs.pt"));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::diff(l.program, l.inputs, {}));
  state.counters["nodes"] = static_cast<double>(l.program.ir.graph.nodes().size());
}
BENCHMARK(BM_DiffLargestFixture)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
