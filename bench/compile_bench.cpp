// bench/compile_bench.cpp — compiler-bound figures, all through the Inductor worker (backend "inductor"),
// all wall time: worker start-up, compile and run time per region size (prefixes of attention_core), one
// exploded compile against one compile per op, and the whole diff as `pt2diff --compiled inductor` runs it
// (cold and warm Inductor cache) with start-up, compiles and the engine's share as counters.
// "Cold": the benchmark gets its own empty Inductor cache and a fresh worker. bench/run.sh runs it.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

#include "pt2diff/advanced/backend.h"
#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"
#include "pt2diff/advanced/interpreter.h"

namespace {

std::string fixture(const std::string& name) { return std::string(PT2DIFF_FIXTURES) + "/" + name; }

struct Setup {
  pt2diff::Program program = pt2diff::load_program(fixture("attention_core.pt2"));
  pt2diff::BoundInputs inputs = pt2diff::bind_inputs(program, pt2diff::load_inputs(fixture("attention_inputs.pt")));
  std::vector<c10::IValue> values = pt2diff::graph_input_values(program, inputs);
  std::string cache;

  Setup() {
    // Every value of the graph (native run), so any region can be fed.
    pt2diff::Interpreter interpreter(program);
    pt2diff::RunOptions o;
    o.free_at_last_use = false;
    o.on_node = [&](const pt2diff::Node& n, const std::vector<c10::IValue>& outs) {
      auto ids = n.output_values();
      for (size_t i = 0; i < ids.size(); ++i) values[static_cast<size_t>(ids[i])] = outs[i];
    };
    interpreter.run(inputs, o);
    static int counter = 0;
    cache = fmt::format("{}/pt2diff-bench-cache-{}-{}", std::filesystem::temp_directory_path().string(), getpid(), ++counter);
  }
  ~Setup() { std::filesystem::remove_all(cache); }

  std::unique_ptr<pt2diff::Backend> inductor() {
    pt2diff::BackendOptions o;
    o.inductor_cache_dir = cache;
    return pt2diff::make_backend("inductor", program, o);
  }
  std::vector<c10::IValue> feed(const pt2diff::RegionSpec& r) const {
    std::vector<c10::IValue> in;
    for (pt2diff::ValueId v : r.inputs) in.push_back(values[static_cast<size_t>(v)]);
    return in;
  }
  pt2diff::RegionSpec prefix(size_t n) const {
    std::vector<pt2diff::NodeId> nodes;
    for (size_t i = 0; i < n; ++i) nodes.push_back(static_cast<pt2diff::NodeId>(i));
    const auto& g = program.ir.graph;
    return pt2diff::RegionSpec::fused(g, nodes, {g.node(static_cast<pt2diff::NodeId>(n - 1)).output_values().front()});
  }
};

double since(std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }

/// Start-up: the first request of a new worker (Python, torch import, archive load) on a 1-node region.
void BM_InductorWorkerStartup(benchmark::State& state) {
  for (auto _ : state) {
    Setup s;
    auto backend = s.inductor();
    auto region = s.prefix(1);
    const auto t = std::chrono::steady_clock::now();
    backend->compile(region, s.feed(region));
    const double total = since(t);
    state.SetIterationTime(total);
    state.counters["startup_s"] = total - backend->last_compile_seconds();
  }
}
BENCHMARK(BM_InductorWorkerStartup)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);

/// Cold compile and run of the first N nodes, fused.
void BM_InductorCompilePrefix(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    Setup s;
    auto backend = s.inductor();
    auto warm = s.prefix(1);
    backend->compile(warm, s.feed(warm));  // start the worker outside the timing
    auto region = s.prefix(n);
    auto compiled = backend->compile(region, s.feed(region));
    compiled->run(s.feed(region));
    state.SetIterationTime(backend->last_compile_seconds());
    state.counters["run_ms"] = compiled->last_run_seconds() * 1e3;
    state.counters["nodes"] = static_cast<double>(n);
  }
}
BENCHMARK(BM_InductorCompilePrefix)->Arg(5)->Arg(10)->Arg(25)->Arg(50)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

/// Every node of attention_core as one exploded compile, against one compile per node (cold cache each).
void BM_InductorExplodedVsPerOp(benchmark::State& state) {
  for (auto _ : state) {
    Setup s;
    auto backend = s.inductor();
    auto warm = s.prefix(1);
    backend->compile(warm, s.feed(warm));
    const auto& g = s.program.ir.graph;
    std::vector<pt2diff::NodeId> all;
    for (const auto& n : g.nodes()) all.push_back(n.id);
    auto ops = pt2diff::RegionSpec::exploded_ops(g, all);
    backend->compile(ops, s.feed(ops));
    const double exploded = backend->last_compile_seconds();
    Setup per_op;  // a fresh cache: kernels compiled above must not be reused
    auto other = per_op.inductor();
    other->compile(warm, per_op.feed(warm));
    double sum = 0;
    for (pt2diff::NodeId id : all) {
      auto one = pt2diff::RegionSpec::exploded_ops(g, {id});
      other->compile(one, per_op.feed(one));
      sum += other->last_compile_seconds();
    }
    state.SetIterationTime(exploded);
    state.counters["exploded_s"] = exploded;
    state.counters["per_op_sum_s"] = sum;
    state.counters["nodes"] = static_cast<double>(all.size());
  }
}
BENCHMARK(BM_InductorExplodedVsPerOp)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

/// The whole diff with the compiled side "inductor" (default options: graph compile, exploded compile,
/// localization if an output diverged), as `pt2diff GRAPH INPUTS` runs it after loading. Wall time;
/// counters split it into worker start-up, compiles, compiled runs and the rest (the engine's runs and
/// metrics, and the protocol's file I/O). `warm`: the Inductor cache holds this graph's kernels from an
/// untimed run first (what a second `pt2diff` on the same graph sees); cold: an empty cache.
void BM_DiffInductor(benchmark::State& state, const char* graph, const char* inputs, bool warm) {
  const pt2diff::Program program = pt2diff::load_program(fixture(graph));
  const pt2diff::BoundInputs in = pt2diff::bind_inputs(program, pt2diff::load_inputs(fixture(inputs)));
  static int counter = 0;
  const std::string cache =
      fmt::format("{}/pt2diff-bench-diff-{}-{}", std::filesystem::temp_directory_path().string(), getpid(), ++counter);
  pt2diff::DiffOptions options;
  options.compiled = "inductor";
  options.backend.inductor_cache_dir = cache;
  if (warm) {
    auto backend = pt2diff::make_backend(options.compiled, program, options.backend);
    pt2diff::diff(program, in, options, *backend);
  }
  double startup = 0, compile = 0, run = 0, compiles = 0, engine = 0;
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      std::filesystem::remove_all(cache);
      state.ResumeTiming();
    }
    const auto t = std::chrono::steady_clock::now();
    auto backend = pt2diff::make_backend(options.compiled, program, options.backend);
    pt2diff::DiffResult r = pt2diff::diff(program, in, options, *backend);
    const double wall = since(t);
    if (r.compiled_failed) {
      state.SkipWithError(("the compile failed: " + r.compiles.front().message).c_str());
      break;
    }
    double c = 0, x = 0;
    for (const auto& rec : r.compiles) c += rec.compile_seconds, x += rec.run_seconds;
    if (r.localization)
      for (const auto& probe : r.localization->probes) c += probe.backend_seconds;
    startup += backend->startup_seconds();
    compile += c;
    run += x;
    compiles += static_cast<double>(r.compiles.size() + (r.localization ? r.localization->compiles : 0));
    engine += wall - backend->startup_seconds() - c - x;
  }
  std::filesystem::remove_all(cache);
  const auto avg = benchmark::Counter::kAvgIterations;
  state.counters["startup_s"] = benchmark::Counter(startup, avg);
  state.counters["compile_s"] = benchmark::Counter(compile, avg);
  state.counters["compiled_run_s"] = benchmark::Counter(run, avg);
  state.counters["rest_s"] = benchmark::Counter(engine, avg);
  state.counters["compiles"] = benchmark::Counter(compiles, avg);
  state.counters["nodes"] = static_cast<double>(program.ir.graph.nodes().size());
}
BENCHMARK_CAPTURE(BM_DiffInductor, mlp_cold, "mlp.pt2", "mlp_inputs.pt", false)->UseRealTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DiffInductor, mlp_warm, "mlp.pt2", "mlp_inputs.pt", true)->UseRealTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DiffInductor, bf16_block_cold, "bf16_block.pt2", "bf16_block_inputs.pt", false)
    ->UseRealTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DiffInductor, bf16_block_warm, "bf16_block.pt2", "bf16_block_inputs.pt", true)
    ->UseRealTime()->Iterations(2)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DiffInductor, attention_core_cold, "attention_core.pt2", "attention_inputs.pt", false)
    ->UseRealTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_DiffInductor, attention_core_warm, "attention_core.pt2", "attention_inputs.pt", true)
    ->UseRealTime()->Iterations(2)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
