"""On a CUDA machine: capture on the GPU, diagnosis on the GPU and on a machine without one (docs/capture.md). Part of
the GPU suite (scripts/gpu_test.sh runs it by tests/python/run_tests.py, tests/cli_case.py says how); skipped where
torch sees no CUDA device.

- pt2diff_capture's torch.compile backend on a bf16 decoder built on cuda (tests/device/models_cuda.py's
  TinyDecoder): the program's logits are eager's bit for bit, and every captured graph is diagnosed by the
  CLI with the real Inductor on cuda:0 (the export's device, the default) and, with no GPU visible
  (CUDA_VISIBLE_DEVICES=""), on the CPU: both agree;
- export_module on an fp16 conv net on cuda (models_cuda.py's AutocastConvNet) whose forward runs under
  torch.autocast("cuda", float16) (an autocast region in the archive): the same two diagnoses, and the region is
  listed by `pt2diff inspect`.
"""
import json
import os
import subprocess
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# python/ only while importing the tree's packages: its pt2diff has no native module, and a test run beside this one
# imports the built pt2diff from PYTHONPATH.
PACKAGES = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PACKAGES)
import pt2diff_capture  # noqa: E402

sys.path.remove(PACKAGES)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from cli_case import CliTestCase  # noqa: E402
from models_cuda import AutocastConvNet, TinyDecoder  # noqa: E402


def diagnose(cli, archive, inputs, tmp, name):
    """The CLI with Inductor on the export's device, then with no GPU visible: (ok, line)."""
    parts = []
    ok = True
    for where, env in (("gpu", {}), ("no gpu", {"CUDA_VISIBLE_DEVICES": ""})):
        report = os.path.join(tmp, f"{name}-{where.replace(' ', '_')}.json")
        run = subprocess.run([cli, archive, inputs, "--json", report], capture_output=True, text=True,
                             env=dict(os.environ, **env))
        rep = json.load(open(report)) if os.path.exists(report) else {}
        native = rep.get("devices", {}).get("native")
        want = "cuda:0" if where == "gpu" else "cpu"
        good = run.returncode == 0 and rep.get("verdict") == "agree" and native == want
        ok &= good
        parts.append(f"{where}: exit {run.returncode}, {rep.get('verdict')} on {native}"
                     f"{'' if good else ' ' + (run.stdout[-300:] + run.stderr.strip()[-300:])}")
    return ok, "; ".join(parts)


class CaptureOnCuda(CliTestCase):
    """The decoder captured by the backend and the conv net exported by export_module, each archive diagnosed on the
    GPU and with none visible, in setUpClass; each test checks one property."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        torch.manual_seed(0)
        model = TinyDecoder().to("cuda", torch.bfloat16).eval()
        ids = torch.randint(0, 512, (2, 32), device="cuda")
        out = os.path.join(cls.tmp, "captured")
        with torch.no_grad():
            cls.expected = model(ids)
            torch._dynamo.reset()
            cls.got = torch.compile(model, backend=pt2diff_capture.capture_backend(out, quiet=True))(ids)
        cls.graphs = json.load(open(os.path.join(out, "index.json")))["graphs"]
        cls.diagnosed = {g["id"]: diagnose(cls.cli, os.path.join(out, g["archive"]), os.path.join(out, g["inputs"]), cls.tmp,
                                           f"graph{g['id']}") for g in cls.graphs}

        net = AutocastConvNet().to("cuda").eval()
        x = torch.randn(2, 3, 16, 16, device="cuda")
        exported = pt2diff_capture.export_module(net, (x,), out=os.path.join(cls.tmp, "convnet"))
        cls.inspect = subprocess.run([cls.cli, "inspect", exported.archive, exported.inputs], capture_output=True, text=True)
        cls.convnet = diagnose(cls.cli, exported.archive, exported.inputs, cls.tmp, "convnet")

    def test_captured_logits_are_eager_bit_for_bit(self):
        self.assertTrue(torch.equal(self.got, self.expected), "the captured program's logits are eager's bit for bit")

    def test_index_lists_every_graph_ok(self):
        """index.json lists at least one graph, each with status ok."""
        graphs = self.graphs
        self.assertTrue(len(graphs) >= 1 and all(g.get("status") == "ok" for g in graphs),
                        f"index.json lists {len(graphs)} graph(s): "
                        f"{', '.join(str(g.get('status')) + ' ' + str(g.get('error', '')) for g in graphs)}")

    def test_captured_graphs_agree_on_gpu_and_cpu(self):
        """Each captured bf16 graph agrees on cuda:0 and, with no GPU visible, on the CPU."""
        for g in self.graphs:
            with self.subTest(graph=g["id"]):
                ok, line = self.diagnosed[g["id"]]
                self.assertTrue(ok, f"captured bf16 graph {g['id']} ({g.get('ops', '?')} ops): {line}")

    def test_autocast_region_listed_by_inspect(self):
        """`pt2diff inspect` of the exported fp16-autocast conv net lists its autocast region."""
        inspect = self.inspect
        listed = "autocast" in inspect.stdout
        self.assertTrue(inspect.returncode == 0 and listed,
                        f"export_module of an fp16-autocast conv net on cuda: inspect exit {inspect.returncode}, "
                        f"{'an autocast region listed' if listed else 'no autocast region: ' + inspect.stdout[-300:]}")

    def test_autocast_conv_net_agrees_on_gpu_and_cpu(self):
        """The exported fp16-autocast conv net agrees on cuda:0 and, with no GPU visible, on the CPU."""
        ok, line = self.convnet
        self.assertTrue(ok, f"the fp16-autocast conv net: {line}")


if __name__ == "__main__":
    unittest.main()
