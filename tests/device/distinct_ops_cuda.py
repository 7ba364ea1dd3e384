#!/usr/bin/env python3
"""On a CUDA machine: the exploded compile with each distinct op compiled once (python/pt2diff_worker/distinct_ops.py)
gives the numbers of the whole exploded graph compiled at once, bit for bit, with Triton kernels.

    python tests/device/distinct_ops_cuda.py [cuda|cpu] [--layers N] [--only distinct|whole --json OUT]

A bf16 Llama-style decoder (bench/memory_bench.py's model: 4 layers, d=256, 64 tokens, attention by
scaled_dot_product_attention) exported on the device; every op's inputs are its eager values (as the engine sends
the fp64 values rounded to their dtypes); the worker compiles the exploded region of all ops twice, with
`distinct_ops` on (the default) and off, caches off. Prints both compile times and exits 1 unless the distinct
ops were fewer than the ops, no fallback was taken, and every output is equal (scripts/gpu_test.sh, part 1).
`--only MODE --json OUT`: one mode's compile and run times (a fresh process per mode, no warm-up shared between
them) written to OUT, nothing compared: bench/run.py's section distinct_ops.
"""
import argparse
import json
import operator
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
import torch  # noqa: E402

import memory_bench  # noqa: E402
from pt2diff_worker.inductor import Worker  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("device", nargs="?", default="cuda")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--only", choices=("distinct", "whole"))
    ap.add_argument("--json")
    a = ap.parse_args()
    device = a.device
    assert device == "cpu" or torch.cuda.is_available(), "needs a CUDA device"
    scope = {}
    exec(memory_bench.MODEL, scope)
    m, ids = scope["build"](dict(layers=a.layers, dim=256, ffn=704, heads=4, vocab=4000, seq=64, dtype="bfloat16"), device)
    with torch.no_grad():
        ep = torch.export.export(m, (ids,))
    tmp = tempfile.mkdtemp(prefix="distinct-ops-")
    archive = os.path.join(tmp, "decoder.pt2")
    torch.export.save(ep, archive)
    w = Worker()
    w.load({"archive": archive, "device": device})
    gm = w.program.graph_module
    values = {}

    class Recording(torch.fx.Interpreter):
        def run_node(self, n):
            values[n.name] = super().run_node(n)
            return values[n.name]

    with torch.no_grad():
        Recording(gm).run(*(w.state.get(n.name, ids) for n in gm.graph.nodes if n.op == "placeholder"))
    ops = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    nodes = [n.name for n in ops]
    inputs = sorted({a.name for n in ops for a in n.all_input_nodes})
    outputs = [u.name for n in ops for u in (n.users if isinstance(values[n.name], tuple) else [n])
               if isinstance(values[u.name], torch.Tensor)]
    example = os.path.join(tmp, "inputs.pt")
    torch.save(tuple((k, values[k]) for k in inputs if k not in w.state), example)
    got, failures = {}, []
    for mode in (a.only,) if a.only else ("distinct", "whole"):
        start = time.perf_counter()
        w.compile({"region": mode, "nodes": nodes, "inputs": inputs, "outputs": outputs, "exploded": True,
                   "example_inputs": example, "distinct_ops": mode == "distinct"})
        compiled = time.perf_counter() - start
        out = os.path.join(tmp, f"{mode}.pt")
        start = time.perf_counter()
        w.run({"region": mode, "inputs": example, "outputs_file": out})
        ran = time.perf_counter() - start
        got[mode] = torch.load(out, weights_only=True)
        region = w.regions[mode][0]
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"mode": mode, "device": device, "layers": a.layers, "ops": len(nodes), "outputs": len(outputs),
                           "distinct": getattr(region, "distinct", len(nodes)), "compile_s": compiled, "run_s": ran}, f)
        extra = (f", {region.distinct} distinct ops, {region.calls} calls, fallback {region.fallback}"
                 if mode == "distinct" else "")
        print(f"{mode}: {len(nodes)} ops compiled in {compiled:.1f} s{extra}")
        if mode == "distinct" and (getattr(region, "distinct", len(nodes)) >= len(nodes) or region.fallback):
            failures.append(f"the distinct ops did not apply ({type(region).__name__})")
    if a.only:
        return
    differ = [o for o, x, y in zip(outputs, got["distinct"], got["whole"]) if not torch.equal(x, y)]
    if differ:
        failures.append(f"{len(differ)} of {len(outputs)} outputs differ: {differ[:8]}")
    for f in failures:
        print("FAIL", f)
    if failures:
        sys.exit(1)
    print(f"all {len(outputs)} outputs bit-identical on {device}")


if __name__ == "__main__":
    main()
