// bench/localize_bench.cpp — localization on synthetic chains of 100 to 100,000 nodes with a planted
// fault: compiles used against the 2*ceil(log2 m)+4 budget, and the engine's own time per probe
// (everything but the backend's compile and run). The graphs are built in C++: exporting a
// 100,000-node module from Python takes longer than the benchmark.
#include <ATen/ops/rand.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <fmt/format.h>

#include "pt2diff/diff.h"
#include "pt2diff/program.h"
#include "pt2diff/inputs.h"

namespace {

using namespace pt2diff;

/// x → n0 → n1 → ...: even nodes double the previous value, odd nodes subtract the one two back
/// (n_even = 2x, n_odd = x): every node reads the one before, values neither grow nor vanish, and
/// a fault anywhere reaches the output undamped.
Program chain(int64_t m) {
  Program p;
  p.path = fmt::format("chain of {} nodes", m);
  Graph& g = p.ir.graph;
  TensorMeta meta;
  meta.dtype = DType::Float;
  meta.sizes = {SymInt{16, {}, {}}};
  meta.strides = {SymInt{1, {}, {}}};
  ValueId x = g.add_value("x", ValueKind::Tensor, meta);
  g.add_input(Argument{Argument::Kind::Tensor, x});
  InputSpec in;
  in.arg = Argument{Argument::Kind::Tensor, x};
  p.ir.input_specs.push_back(in);
  ValueId prev2 = x, prev = x;
  for (int64_t i = 0; i < m; ++i) {
    Node n;
    n.name = fmt::format("n{}", i);
    ValueId out = g.add_value(n.name, ValueKind::Tensor, meta);
    if (i % 2 == 0) {
      n.target = "torch.ops.aten.mul.Scalar";
      n.inputs = {{"self", Argument{Argument::Kind::Tensor, prev}, false}, {"other", Argument{Argument::Kind::Float, 2.0}, false}};
    } else {
      n.target = "torch.ops.aten.sub.Tensor";
      n.inputs = {{"self", Argument{Argument::Kind::Tensor, prev}, false}, {"other", Argument{Argument::Kind::Tensor, prev2}, false}};
    }
    n.outputs = {Argument{Argument::Kind::Tensor, out}};
    g.add_node(std::move(n));
    prev2 = prev;
    prev = out;
  }
  g.add_output(Argument{Argument::Kind::Tensor, prev});
  OutputSpec o;
  o.arg = Argument{Argument::Kind::Tensor, prev};
  p.ir.output_specs.push_back(o);
  g.finalize();
  return p;
}

void BM_LocalizeChainFault(benchmark::State& state) {
  const int64_t m = state.range(0);
  const bool exploded = state.range(1) != 0;
  Program p = chain(m);
  UserInputs given;
  given.args.push_back(at::rand({16}).mul(2).sub(1));
  BoundInputs in = bind_inputs(p, given);
  DiffOptions o;
  o.compiled = fmt::format("fault:n{}:scale=0.05", m * 2 / 3);  // two thirds down the chain
  o.exploded = exploded;
  o.localize.use_exploded = exploded;
  size_t compiles = 0, budget = 0, probes = 0;
  double engine = 0;
  bool found = true;
  for (auto _ : state) {
    DiffResult r = diff(p, in, o);
    if (!r.localization) {
      state.SkipWithError(("no localization: " + r.outputs.at(0).verdict.reason + " " + r.outputs.at(0).verdict.detail).c_str());
      return;
    }
    const Localization& l = *r.localization;
    found = found && l.culprit.nodes == std::vector<std::string>{fmt::format("n{}", m * 2 / 3)};
    compiles = l.compiles;
    budget = l.budget;
    probes = l.probes.size();
    double backend = 0;
    for (const Probe& pr : l.probes) backend += pr.backend_seconds;
    engine = (l.seconds - backend) / std::max<size_t>(probes, 1);
  }
  state.counters["compiles"] = static_cast<double>(compiles);
  state.counters["budget"] = static_cast<double>(budget);
  state.counters["probes"] = static_cast<double>(probes);
  state.counters["engine_ms_per_probe"] = engine * 1e3;
  state.counters["found"] = found ? 1 : 0;
}
BENCHMARK(BM_LocalizeChainFault)
    ->ArgsProduct({{100, 1000, 10000, 100000}, {0, 1}})
    ->ArgNames({"nodes", "exploded"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
