// bench/dag_bench.cpp — DAG algorithms on synthetic graphs of 100 to 100,000 nodes: a chain of
// binary ops where every node also reads the node two back (so cones and frontiers are not trivial).
#include <benchmark/benchmark.h>

#include "graphs/dag.h"

namespace {

pt2diff::Graph make_graph(int64_t n) {
  using namespace pt2diff;
  Graph g;
  auto t = [&](ValueId v) { return Argument{Argument::Kind::Tensor, v}; };
  ValueId x = g.add_value("x", ValueKind::Tensor);
  g.add_input(t(x));
  std::vector<ValueId> vals{x, x};
  for (int64_t i = 0; i < n; ++i) {
    ValueId out = g.add_value("v" + std::to_string(i), ValueKind::Tensor);
    Node node;
    node.name = "v" + std::to_string(i);
    node.target = "torch.ops.aten.add.Tensor";
    node.inputs = {{"self", t(vals[vals.size() - 1]), false}, {"other", t(vals[vals.size() - 2]), false}};
    node.outputs = {t(out)};
    g.add_node(std::move(node));
    vals.push_back(out);
  }
  g.add_output(t(vals.back()));
  g.finalize();
  return g;
}

void BM_BuildDag(benchmark::State& state) {
  pt2diff::Graph g = make_graph(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::Dag(g));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_BuildDag)->RangeMultiplier(10)->Range(100, 100000)->Unit(benchmark::kMicrosecond)->Complexity();

void BM_AncestorConeOfMiddle(benchmark::State& state) {
  pt2diff::Graph g = make_graph(state.range(0));
  pt2diff::Dag dag(g);
  std::vector<pt2diff::ValueId> mid{g.find("v" + std::to_string(state.range(0) / 2))};
  for (auto _ : state) benchmark::DoNotOptimize(dag.ancestor_cone(mid));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_AncestorConeOfMiddle)->RangeMultiplier(10)->Range(100, 100000)->Unit(benchmark::kMicrosecond)->Complexity();

void BM_FrontierOfHalfPrefix(benchmark::State& state) {
  pt2diff::Graph g = make_graph(state.range(0));
  pt2diff::Dag dag(g);
  pt2diff::Region prefix;
  for (pt2diff::NodeId i = 0; i < state.range(0) / 2; ++i) prefix.nodes.push_back(i);
  for (auto _ : state) benchmark::DoNotOptimize(dag.frontier(prefix));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_FrontierOfHalfPrefix)->RangeMultiplier(10)->Range(100, 100000)->Unit(benchmark::kMicrosecond)->Complexity();

void BM_LastUses(benchmark::State& state) {
  pt2diff::Graph g = make_graph(state.range(0));
  std::vector<pt2diff::NodeId> order(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<pt2diff::NodeId>(i);
  for (auto _ : state) benchmark::DoNotOptimize(pt2diff::last_uses(g, order));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_LastUses)->RangeMultiplier(10)->Range(100, 100000)->Unit(benchmark::kMicrosecond)->Complexity();

void BM_TopologicalSort(benchmark::State& state) {
  pt2diff::Graph g = make_graph(state.range(0));
  pt2diff::Dag dag(g);
  for (auto _ : state) benchmark::DoNotOptimize(dag.topological_order());
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_TopologicalSort)->RangeMultiplier(10)->Range(100, 100000)->Unit(benchmark::kMicrosecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
