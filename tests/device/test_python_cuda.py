"""On a CUDA machine: pt2diff from Python where the model lives (docs/python.md, "On a GPU"). Part of the GPU suite
(scripts/gpu_test.sh runs it by tests/python/run_tests.py with PYTHONPATH=BUILD/python, tests/cli_case.py says how);
skipped where torch sees no CUDA device.

A bf16 decoder (RMSNorm, causal SDPA, a gated MLP) built on cuda, its token ids on cuda:
- pt2diff.diff(model, (ids,)) with the real Inductor agrees, and the report says the eager runs were on
  cuda:0 (``devices``) without device= being given: the run follows the tensors;
- the same graph through the CLI (archive and inputs written here) agrees too: both wall times in the messages, each
  run compiling cold (its own Inductor and Triton caches);
- a planted fault (``compiled="fault:linear#K:scale=0.5"``, the engine's eager with one wrong linear) fails
  and localization names that linear's node;
- pt2diff.testing.assert_agrees passes on the clean model;
- inputs on the CPU for a model on the GPU, and an ExportedProgram given inputs on two devices: one
  BadInputsError each, naming the input and the remedy.
"""
import json
import os
import subprocess
import sys
import time
import unittest
import unittest.mock

import torch

import pt2diff
from pt2diff.testing import assert_agrees

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from cli_case import CliTestCase  # noqa: E402
from models_cuda import seeded_decoder  # noqa: E402


class PythonOnCuda(CliTestCase):
    """The decoder diffed in memory, by the CLI and with a planted fault, in setUpClass; each test checks one of those
    or runs one cheap call of its own."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        cls.model, cls.ids = model, ids = seeded_decoder()

        # Each of the two timed runs (in memory, then the CLI) compiles cold: its own Inductor and Triton caches.
        caches = cls.tmp
        environ = unittest.mock.patch.dict(os.environ)  # TRITON_CACHE_DIR as it was, after the class
        environ.start()
        cls.addClassCleanup(environ.stop)
        os.environ["TRITON_CACHE_DIR"] = os.path.join(caches, "triton-in-memory")
        start = time.monotonic()
        cls.in_memory = pt2diff.diff(model, (ids,), compiled="inductor", inductor_cache=os.path.join(caches, "in-memory"))
        cls.in_memory_seconds = time.monotonic() - start

        archive, inputs, cls.report_path = (os.path.join(cls.tmp, n)
                                            for n in ("decoder.pt2", "decoder_inputs.pt", "decoder.json"))
        cls.ep = torch.export.export(model, (ids,))
        torch.export.save(cls.ep, archive)
        torch.save((ids,), inputs)
        os.environ["TRITON_CACHE_DIR"] = os.path.join(caches, "triton-cli")
        start = time.monotonic()
        cls.cli_run = subprocess.run([cls.cli, archive, inputs, "--json", cls.report_path, "--inductor-cache",
                                      os.path.join(caches, "cli")], capture_output=True, text=True)
        cls.cli_seconds = time.monotonic() - start

        # The planted fault: the fourth linear (the first block's gate) 50% off.
        cls.linears = [n.name for n in cls.ep.graph.nodes
                       if n.op == "call_function" and n.target == torch.ops.aten.linear.default]
        cls.faulty = pt2diff.diff(cls.ep, (ids,), compiled="fault:linear#4:scale=0.5")

    def test_diff_in_memory_agrees_on_cuda(self):
        """pt2diff.diff(model on cuda, ids on cuda) agrees, its eager runs on cuda:0 with no device= given."""
        r = self.in_memory
        compiles = ", ".join(f"{c.what} {c.get('compile_seconds', 0):.1f} s" for c in r.compiles)
        self.assertTrue(r.agrees and r.verdict == "agree" and r.devices.native == "cuda:0",
                        f"pt2diff.diff(model on cuda, ids on cuda): {r.verdict}, level {r.level}, eager runs on "
                        f"{r.devices.native}, fp64 on {r.devices.reference}, node verdict {r.node_verdict.level} (worst "
                        f"{r.node_verdict.worst_ratio:.3g}x), {self.in_memory_seconds:.1f} s (compiles: {compiles})")

    def test_cli_on_the_same_graph_agrees(self):
        """The CLI on the exported graph: exit 0, agree, eager runs on cuda:0."""
        run = self.cli_run
        rep = json.load(open(self.report_path)) if os.path.exists(self.report_path) else {}
        cli_compiles = ", ".join(f"{c['what']} {c.get('compile_seconds', 0):.1f} s" for c in rep.get("compiles", []))
        self.assertTrue(run.returncode == 0 and rep.get("verdict") == "agree"
                        and rep.get("devices", {}).get("native") == "cuda:0",
                        f"the CLI on the same graph: exit {run.returncode}, {rep.get('verdict')}, eager runs on "
                        f"{rep.get('devices', {}).get('native')}, {self.cli_seconds:.1f} s (compiles: "
                        f"{cli_compiles}; in memory {self.in_memory_seconds:.1f} s) {run.stderr.strip()[-300:]}")

    def test_planted_fault_localized_to_its_linear(self):
        """The fourth linear 50% off: diverged, the culprit that linear's node, on cuda:0."""
        r, linears = self.faulty, self.linears
        culprit = r.culprit.nodes if r.culprit is not None else None
        self.assertTrue(not r.agrees and r.verdict == "diverged" and culprit == [linears[3]] and r.devices.native == "cuda:0",
                        f"a planted fault at {linears[3]}: {r.verdict}, culprit {culprit} on {r.devices.native}")

    def test_assert_agrees_passes(self):
        """pt2diff.testing.assert_agrees(model on cuda, (ids,)) passes."""
        try:
            assert_agrees(self.model, (self.ids,))
        except AssertionError as e:
            self.fail(f"pt2diff.testing.assert_agrees(model on cuda, (ids,)) raised {str(e)[:300]}")

    def test_ids_on_the_cpu_for_a_model_on_cuda(self):
        """One BadInputsError naming the input and where the weights are."""
        with self.assertRaises(pt2diff.BadInputsError, msg="ids on the CPU for a model on cuda: no error") as caught:
            pt2diff.diff(self.model, (self.ids.cpu(),), compiled="eager")
        self.assertIn("input 'ids' is on cpu but the module's weights are on cuda:0", str(caught.exception),
                      f"ids on the CPU, model on cuda: {caught.exception}")

    def test_inputs_on_two_devices(self):
        """An ExportedProgram given inputs on two devices: one BadInputsError naming them."""
        class Add(torch.nn.Module):
            def forward(self, x, y):
                return x + y

        two = torch.export.export(Add(), (torch.randn(4), torch.randn(4)))
        with self.assertRaises(pt2diff.BadInputsError, msg="inputs on two devices: no error") as caught:
            pt2diff.diff(two, (torch.randn(4, device="cuda"), torch.randn(4)), compiled="eager")
        self.assertIn("input 'y' is on cpu but input 'x' is on cuda:0", str(caught.exception),
                      f"inputs on two devices: {caught.exception}")


if __name__ == "__main__":
    unittest.main()
