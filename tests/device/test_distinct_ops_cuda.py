"""On a CUDA machine: the exploded compile with each distinct op compiled once (python/pt2diff_worker/distinct_ops.py)
gives the numbers of the whole exploded graph compiled at once, bit for bit, with Triton kernels. Part of the GPU
suite (scripts/gpu_test.sh, part 1, runs it by tests/python/run_tests.py); skipped where torch sees no CUDA device.

A bf16 Llama-style decoder (bench/memory_bench.py's model: 4 layers, d=256, 64 tokens, attention by
scaled_dot_product_attention) exported on the device; every op's inputs are its eager values (as the engine sends
the fp64 values rounded to their dtypes); the worker compiles the exploded region of all ops twice, with
`distinct_ops` on (the default) and off, caches off, and prints both compile times. The distinct ops must be fewer
than the ops with no fallback taken, and every output equal.

As a command, one mode's compile and run times (a fresh process per mode, no warm-up shared between them) written to
OUT, nothing compared: bench/run.py's section distinct_ops.

    python tests/device/test_distinct_ops_cuda.py [cuda|cpu] [--layers N] --only distinct|whole --json OUT
"""
import argparse
import json
import operator
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# python/ only while importing the tree's packages: its pt2diff has no native module, and a test run beside this one
# imports the built pt2diff from PYTHONPATH.
PACKAGES = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PACKAGES)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
import torch  # noqa: E402

import memory_bench  # noqa: E402
from pt2diff_worker.inductor import Worker  # noqa: E402

sys.path.remove(PACKAGES)


class ExplodedRegion:
    """The decoder of `layers` layers exported on `device`, loaded by a worker, with every op's eager value recorded:
    the exploded region of all its ops (nodes, inputs, outputs) and its example inputs, in the folder `tmp`."""

    def __init__(self, device, layers, tmp):
        scope = {}
        exec(memory_bench.MODEL, scope)
        m, ids = scope["build"](dict(layers=layers, dim=256, ffn=704, heads=4, vocab=4000, seq=64, dtype="bfloat16"), device)
        with torch.no_grad():
            ep = torch.export.export(m, (ids,))
        self.tmp = tmp
        archive = os.path.join(tmp, "decoder.pt2")
        torch.export.save(ep, archive)
        self.worker = w = Worker()
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
        self.nodes = [n.name for n in ops]
        self.inputs = sorted({a.name for n in ops for a in n.all_input_nodes})
        self.outputs = [u.name for n in ops for u in (n.users if isinstance(values[n.name], tuple) else [n])
                        if isinstance(values[u.name], torch.Tensor)]
        self.example = os.path.join(tmp, "inputs.pt")
        torch.save(tuple((k, values[k]) for k in self.inputs if k not in w.state), self.example)

    def compile_and_run(self, mode):
        """Compiles the region with `distinct_ops` on (mode "distinct") or off ("whole") and runs it: its outputs, the
        worker's region, and the compile and run times in seconds."""
        start = time.perf_counter()
        self.worker.compile({"region": mode, "nodes": self.nodes, "inputs": self.inputs, "outputs": self.outputs,
                             "exploded": True, "example_inputs": self.example, "distinct_ops": mode == "distinct"})
        compiled = time.perf_counter() - start
        out = os.path.join(self.tmp, f"{mode}.pt")
        start = time.perf_counter()
        self.worker.run({"region": mode, "inputs": self.example, "outputs_file": out})
        ran = time.perf_counter() - start
        region = self.worker.regions[mode][0]
        extra = (f", {region.distinct} distinct ops, {region.calls} calls, fallback {region.fallback}"
                 if mode == "distinct" else "")
        print(f"{mode}: {len(self.nodes)} ops compiled in {compiled:.1f} s{extra}")
        return torch.load(out, weights_only=True), region, compiled, ran


class DistinctOps(unittest.TestCase):
    """The 4-layer decoder's exploded region compiled with the distinct ops and whole, on cuda, in setUpClass."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        tmp = tempfile.mkdtemp(prefix="distinct-ops-")
        cls.addClassCleanup(shutil.rmtree, tmp, True)
        cls.region = ExplodedRegion("cuda", 4, tmp)
        cls.got, cls.regions = {}, {}
        for mode in ("distinct", "whole"):
            cls.got[mode], cls.regions[mode], _, _ = cls.region.compile_and_run(mode)

    def test_distinct_ops_apply(self):
        """Fewer distinct ops than ops, and no fallback to compiling them all."""
        region, ops = self.regions["distinct"], len(self.region.nodes)
        self.assertTrue(getattr(region, "distinct", ops) < ops and not region.fallback,
                        f"the distinct ops did not apply ({type(region).__name__})")

    def test_outputs_bit_identical(self):
        """Every output of the distinct ops' compile equals the whole exploded graph's."""
        outputs = self.region.outputs
        differ = [o for o, x, y in zip(outputs, self.got["distinct"], self.got["whole"]) if not torch.equal(x, y)]
        self.assertEqual(differ, [], f"{len(differ)} of {len(outputs)} outputs differ: {differ[:8]}")


def main():
    """bench/run.py's measurement: one mode's compile and run times, written to --json."""
    ap = argparse.ArgumentParser()
    ap.add_argument("device", nargs="?", default="cuda")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--only", choices=("distinct", "whole"), required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    assert a.device == "cpu" or torch.cuda.is_available(), "needs a CUDA device"
    tmp = tempfile.mkdtemp(prefix="distinct-ops-")
    try:
        region = ExplodedRegion(a.device, a.layers, tmp)
        _, r, compiled, ran = region.compile_and_run(a.only)
    finally:
        shutil.rmtree(tmp, True)
    with open(a.json, "w") as f:
        json.dump({"mode": a.only, "device": a.device, "layers": a.layers, "ops": len(region.nodes),
                   "outputs": len(region.outputs), "distinct": getattr(r, "distinct", len(region.nodes)),
                   "compile_s": compiled, "run_s": ran}, f)


if __name__ == "__main__":
    main()
