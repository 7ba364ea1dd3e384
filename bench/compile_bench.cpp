// bench/compile_bench.cpp — what compiles cost: Inductor worker start-up, compile and run time per
// region size (prefixes of attention_core), and one exploded compile against one compile per op.
// Cold: every benchmark gets its own empty Inductor cache (a fresh worker). Figures in docs/performance.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

#include "pt2diff/backend.h"
#include "pt2diff/interpreter.h"

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
void BM_WorkerStartup(benchmark::State& state) {
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
BENCHMARK(BM_WorkerStartup)->UseManualTime()->Iterations(2)->Unit(benchmark::kSecond);

/// Cold compile and run of the first N nodes, fused.
void BM_CompilePrefix(benchmark::State& state) {
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
BENCHMARK(BM_CompilePrefix)->Arg(5)->Arg(10)->Arg(25)->Arg(50)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

/// Every node of attention_core as one exploded compile, against one compile per node (cold cache each).
void BM_ExplodedVsPerOp(benchmark::State& state) {
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
BENCHMARK(BM_ExplodedVsPerOp)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
