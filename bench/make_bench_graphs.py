"""Writes the benchmark graphs into OUT_DIR and times torch.fx.Interpreter on them for comparison.

    python bench/make_bench_graphs.py OUT_DIR

chain_tiny.pt2   1000 tiny elementwise ops on a float32[8] tensor: per-node interpreter overhead
chain_wide.pt2   300 elementwise ops on a float32[256, 256] tensor: memory with and without freeing
Prints the per-node time of torch.fx.Interpreter (and of the compiled-to-Python GraphModule) on
chain_tiny, the figure docs/performance.md sets next to pt2diff's own.
"""
import json
import os
import sys
import time

import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)


class Chain(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        for i in range(self.n):
            x = x * 1.0001 if i % 2 else x + 0.5
        return x


def export(name, n, shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    ep = torch.export.export(Chain(n), (x,))
    torch.export.save(ep, os.path.join(OUT, f"{name}.pt2"))
    torch.save((x,), os.path.join(OUT, f"{name}_inputs.pt"))
    return ep, x


def per_node_seconds(fn, nodes, repeats=20):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / nodes


ep, x = export("chain_tiny", 1000, (8,))
export("chain_wide", 300, (256, 256))
gm = ep.module()
nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
flat = [x]
with torch.no_grad():
    fx = per_node_seconds(lambda: torch.fx.Interpreter(gm).run(*flat), nodes)
    codegen = per_node_seconds(lambda: gm(x), nodes)
print(json.dumps({"nodes": nodes, "fx_interpreter_us_per_node": fx * 1e6, "graph_module_us_per_node": codegen * 1e6}))
