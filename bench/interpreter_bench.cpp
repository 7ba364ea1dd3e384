// bench/interpreter_bench.cpp — engine-bound figures, no compiler: interpreter overhead per node (native
// and fp64 runs) and the whole diff with the compiled side "eager" (`pt2diff --compiled eager`).
// Compiler-bound figures (Inductor) are in compile_bench.cpp. Graphs come from
// bench/make_bench_graphs.py (PT2DIFF_BENCH_GRAPHS) and fixtures/. bench/run.sh runs it.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/advanced/interpreter.h"

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

/// One native (graph dtypes) run of the interpreter, nothing else: its overhead per node.
void BM_NativeRun(benchmark::State& state, const char* graph) {
  run_mode(state, bench_graph(std::string(graph) + ".pt2"), bench_graph(std::string(graph) + "_inputs.pt"), pt2diff::Precision::Native);
}
BENCHMARK_CAPTURE(BM_NativeRun, chain_tiny, "chain_tiny")->Unit(benchmark::kMillisecond);

void BM_Fp64Run(benchmark::State& state, const char* graph) {
  run_mode(state, bench_graph(std::string(graph) + ".pt2"), bench_graph(std::string(graph) + "_inputs.pt"), pt2diff::Precision::Fp64);
}
BENCHMARK_CAPTURE(BM_Fp64Run, chain_tiny, "chain_tiny")->Unit(benchmark::kMillisecond);

/// pt2diff::diff with the compiled side "eager" (what `pt2diff --compiled eager` runs): the native, fp64
/// and local runs, the exploded "compile" (in process), the metrics of every value and the verdicts.
/// Engine-bound: no compiler, no worker process.
void diff_eager(benchmark::State& state, const Loaded& l) {
  pt2diff::DiffOptions options;
  options.compiled = "eager";
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::diff(l.program, l.inputs, options));
  const auto nodes = static_cast<double>(l.program.ir.graph.nodes().size());
  state.counters["us_per_node"] = benchmark::Counter(nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["nodes"] = nodes;
}

void BM_DiffEager(benchmark::State& state, const char* graph) {
  const std::string name = graph;
  if (name == "chain_tiny")
    diff_eager(state, Loaded(bench_graph("chain_tiny.pt2"), bench_graph("chain_tiny_inputs.pt")));
  else
    diff_eager(state, Loaded(fixture(name + ".pt2"), fixture(name.substr(0, name.rfind("_core")) + "_inputs.pt")));
}
BENCHMARK_CAPTURE(BM_DiffEager, chain_tiny, "chain_tiny")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DiffEager, mlp, "mlp")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DiffEager, bf16_block, "bf16_block")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_DiffEager, attention_core, "attention_core")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
