"""pt2diff's Inductor backend gives the numbers Python's torch.compile gives. A ctest, label inductor (tests/cli_case.py
says how to run it alone); ctest and scripts/gpu_test.sh each run some fixtures, by node id
(test_inductor_agreement.py::InductorAgreement::test_mlp ...).

For each fixture: `pt2diff NAME.pt2 NAME_inputs.pt --save-outputs F --json R`, whose node verdict must be
`pass` (clean Inductor stands out at no node), then in this
process `torch.compile(ep.module())` on the same inputs under torch.no_grad() (the worker compiles
for inference), and the compiled outputs must be equal bit for bit. With PT2DIFF_TEST_DEVICE=cuda
(scripts/gpu_test.sh) both compile for the GPU: `--device cuda`, and the module and inputs moved there,
and both with Inductor's `deterministic=True`: on the GPU Inductor otherwise benchmarks reduction configs
at compile time and keeps the fastest, so two compiles of one graph can sum in different orders (seen:
attention_core's softmax 6e-8 apart between two compiles on an H200).
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# torch.compile in this process uses the Inductor cache pt2diff's worker uses, one per ATEN_CPU_CAPABILITY
# (pt2diff_worker.cli.inductor_cache_dir): not Inductor's default (/tmp/torchinductor_$USER), which is not
# keyed by the capability, so a graph compiled there under one capability is reused under another (seen:
# under "default" after a native avx2 run, the cached kernels used at::vec, which the default build does
# not declare: a C++ compile error). Sharing the worker's cache shares the kernels' C++ builds (keyed on
# their source) instead of compiling each kernel twice; a compiled graph is reused only where its FX graph,
# inputs and config hash alike, which is what the bit-identity below is about.
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from pt2diff_worker.cli import DEFAULT_CACHE_DIR, inductor_cache_dir, keep_precompiled_headers_in_cache  # noqa: E402

sys.path.pop(0)
_WORKER_ENV = dict(os.environ)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(
    os.environ.get("PT2DIFF_INDUCTOR_CACHE") or os.path.expanduser(DEFAULT_CACHE_DIR), os.environ.get("ATEN_CPU_CAPABILITY", ""))

import torch  # noqa: E402

keep_precompiled_headers_in_cache()  # and its precompiled headers too
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402


def user_call(inputs, ep):
    if isinstance(inputs, dict):  # by name: keyword where the program was exported with keywords
        _, example_kwargs = ep.example_inputs
        return (tuple(v for k, v in inputs.items() if k not in example_kwargs),
                {k: v for k, v in inputs.items() if k in example_kwargs})
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2 and isinstance(inputs[0], (tuple, list)) \
            and isinstance(inputs[1], dict):
        return tuple(inputs[0]), inputs[1]
    return tuple(inputs), {}


def on_device(module, device):
    """The module on `device`, with the device arguments its export baked in (factories, casts,
    `_assert_tensor_metadata(device=cpu)`) following it: what the worker does to compile for `device`."""
    target = torch.device(device)
    if target.type == "cuda" and target.index is None:  # asserts compare devices exactly: cuda is cuda:N
        target = torch.device("cuda", torch.cuda.current_device())
    module = module.to(target)
    move = lambda v: target if isinstance(v, torch.device) else v  # noqa: E731
    for gm in module.modules():
        if isinstance(gm, torch.fx.GraphModule):
            for n in gm.graph.nodes:
                n.args = torch.fx.node.map_aggregate(n.args, move)
                n.kwargs = torch.fx.node.map_aggregate(n.kwargs, move)
            gm.recompile()
    return module


class InductorAgreement(CliTestCase):
    """One test per fixture, each with its own pt2diff run and torch.compile (the runs are not shared, so that a
    node id runs only its fixture's)."""

    def check(self, name):
        """NAME's clean node verdict, and its outputs through pt2diff bit-identical to torch.compile's."""
        device = self.device
        base = name[:-5] if name.endswith("_core") else name
        graph = self.fixture(name + ".pt2")
        inputs_file = self.fixture(base + "_inputs.pt")
        saved, report = os.path.join(self.tmp, name + "_outputs.pt"), os.path.join(self.tmp, name + ".json")
        deterministic = ["--inductor-config", "deterministic=True"] if device != "cpu" else []
        run = subprocess.run([self.cli, graph, inputs_file, "--save-outputs", saved, "--json", report, "--device", device,
                              *deterministic], capture_output=True, text=True, env=_WORKER_ENV)
        self.assertIn(run.returncode, (0, 1), f"{name}: pt2diff exited {run.returncode}: {run.stderr.strip()}")
        # Clean Inductor stands out at no node (docs/verdicts.md, "Node evidence"): the exploded compile ran,
        # and no node's compiled local error reaches --node-ratio times eager's.
        with self.subTest("node verdict"):
            nv = json.load(open(report))["node_verdict"]
            clean = nv["available"] and nv["level"] == "pass" and not nv["findings"]
            self.assertTrue(clean, f"{name}: node verdict {nv['level']} over {nv['judged']} values, worst {nv['worst_node']} at "
                                   f"{nv['worst_ratio']:.3g}x eager's local error: WRONG "
                                   f"({nv.get('unavailable') or str(nv['findings'])[:300]})")
        compiled, _, _ = torch.load(saved, weights_only=True)
        ep = torch.export.load(graph)
        args, kwargs = user_call(torch.load(inputs_file, weights_only=True), ep)
        module = ep.module()
        if device != "cpu":
            module = on_device(module, device)
            args, kwargs = torch.utils._pytree.tree_map(
                lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (args, kwargs))
        torch._dynamo.reset()
        with torch.no_grad(), torch._inductor.config.patch(deterministic=device != "cpu"):
            expected = torch.compile(module)(*args, **kwargs)
        expected = [t.cpu() for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
        # pt2diff reports user outputs first, in signature order: the leaves of the user's output.
        self.assertGreaterEqual(len(compiled), len(expected),
                                f"{name}: pt2diff saved {len(compiled)} outputs, torch.compile returned {len(expected)}")
        for i, (got, want) in enumerate(zip(compiled, expected)):
            with self.subTest(output=i):
                same = got is not None and got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
                diff = (got.double() - want.double()).abs().max().item() if got is not None and got.shape == want.shape else "-"
                self.assertTrue(same, f"{name}: output {i} differs from torch.compile (max |diff| {diff}; "
                                      f"{None if got is None else (tuple(got.shape), got.dtype)} against "
                                      f"{(tuple(want.shape), want.dtype)})")

    def test_mlp(self):
        self.check("mlp")

    def test_bf16_block(self):
        """A bf16 block with explicit casts."""
        self.check("bf16_block")

    def test_bf16_block_core(self):
        self.check("bf16_block_core")

    def test_attention(self):
        """SDPA self-attention with an additive mask passed by keyword."""
        self.check("attention")

    def test_attention_core(self):
        self.check("attention_core")

    def test_conv_bn_relu(self):
        self.check("conv_bn_relu")

    def test_ln_softmax_gelu(self):
        self.check("ln_softmax_gelu")

    def test_multi_output_core(self):
        """max, split and native_layer_norm: several outputs each."""
        self.check("multi_output_core")

    def test_dynamic_batch(self):
        """A graph exported with a dynamic batch."""
        self.check("dynamic_batch")

    def test_cond(self):
        """torch.cond: a graph with branches."""
        self.check("cond")

    def test_index_none(self):
        """index.Tensor with a None, and two buffers sharing one storage."""
        self.check("index_none")


if __name__ == "__main__":
    unittest.main()
