"""The PyTorch unit test `--repro` writes (test_repro.py, docs/upstream.md) for planted Inductor bugs in a model
exported on the device it runs on. A ctest (label inductor, the fused window on the CPU; tests/cli_case.py says how to
run it alone) and part 10 of scripts/gpu_test.sh (both bugs on CUDA, PT2DIFF_TEST_DEVICE=cuda).

The model (`Gate`: linear, then sigmoid(h * 0.5 + 0.25) * h in fp32) is exported on the device at test time, so a
CUDA run judges a window exported there. The bug is in Inductor's lowering of sigmoid
(tests/engine/localize/planted_lowering.py), loaded by a wrapper Python (double_site/sitecustomize.py) given to
pt2diff as --worker-python, as a torch with that bug would be:
- op-level (OpLevel): sigmoid's result is 1% off wherever it is lowered; pt2diff names sigmoid alone;
- fused window (FusedWindow): 1% off only when sigmoid's input is a pointwise computation fused into its kernel
  (PLANT_WHERE=fused); sigmoid compiled alone is right, so pt2diff names the window add .. sigmoid.
For each: the culprit named, the compiler's artifacts of the window written (its generated code holds the planted
scale), and test_repro.py run: under the planted torch it FAILS, under the stock torch it passes, also as a pytest
file. The op-level bug on the CPU is test_recheck_torches.py's; this test runs the fused window there.
"""
import importlib.util
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # pt2diff_capture
sys.path.insert(0, HERE)
from test_recheck_torches import wrapper  # noqa: E402


def export_gate(out, device):
    """Gate exported on `device` with pt2diff_capture.export_module: (archive, inputs)."""
    import torch
    from pt2diff_capture import export_module

    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            h = self.fc(x)
            return torch.sigmoid(h * 0.5 + 0.25) * h

    torch.manual_seed(0)
    done = export_module(Gate().to(device).eval(), (torch.randn(8, 16, device=device),), out=out)
    return done.archive, done.inputs


class PlantedSigmoid:
    """The tests of one planted bug (a mixin of a CliTestCase): Gate exported, then pt2diff run with the planted torch
    as --worker-python and --repro, in setUpClass."""

    NAME = WHERE = KIND = ""  # the case's name, PT2DIFF_PLANT_WHERE and the culprit's kind
    NODES = []  # the culprit's nodes
    ON_CPU = True  # run where PT2DIFF_TEST_DEVICE is cpu

    @classmethod
    def setUpClass(cls):
        if cls.device == "cpu" and not cls.ON_CPU:
            raise unittest.SkipTest(f"{cls.NAME}: on the CPU this bug is test_recheck_torches.py's (run on cuda here)")
        super().setUpClass()
        graph, inputs = export_gate(os.path.join(cls.tmp, "gate"), cls.device)
        cls.planted = wrapper(cls.tmp, "planted", sys.executable, PT2DIFF_TORCH_DOUBLE="planted", PT2DIFF_PLANT_OP="sigmoid",
                              PT2DIFF_PLANT_ERROR="0.01", PT2DIFF_PLANT_WHERE=cls.WHERE)
        cls.repro, path = os.path.join(cls.tmp, "repro"), os.path.join(cls.tmp, "report.json")
        cls.pt2diff_run = subprocess.run([cls.cli, graph, inputs, "--device", cls.device, "--worker-python", cls.planted,
                                          "--repro", cls.repro, "--json", path], capture_output=True, text=True)
        cls.report = json.load(open(path)) if os.path.exists(path) else {}

    def setUp(self):
        p = self.pt2diff_run
        self.assertTrue(self.report, f"{self.NAME}: no report: {p.returncode} {p.stderr[-400:]}")

    def test_planted_bug_fails_the_graph(self):
        p = self.pt2diff_run
        self.assertTrue(p.returncode == 1 and self.report,
                        f"{self.NAME}: the planted bug fails the graph: {p.returncode} {p.stderr[-400:]}")

    def test_report_is_valid(self):
        self.assertValidReport(self.report)

    def localization(self):
        return self.report.get("localization") or {}

    def test_culprit(self):
        culprit = self.localization().get("culprit") or {}
        self.assertTrue(culprit.get("kind") == self.KIND and culprit.get("nodes") == self.NODES,
                        f"{self.NAME}: the culprit is {self.KIND} {self.NODES}: {culprit.get('kind')} {culprit.get('nodes')}")

    def test_compiler_artifacts(self):
        """The compiler's artifacts of the window are written, its generated code holding the planted scale."""
        made = {a["what"]: a["path"] for a in (self.localization().get("repro") or {}).get("artifacts") or []}
        code = open(made["output_code"]).read() if "output_code" in made else ""
        self.assertTrue({"post_grad_graph", "output_code", "ir_post_fusion"} <= set(made) and "1.01" in code,
                        f"{self.NAME}: the compiler's artifacts of the window, its generated code holding the planted scale: "
                        f"{sorted(made)}")

    def repro_test(self):
        """The path of test_repro.py (written)."""
        test = os.path.join(self.repro, "test_repro.py")
        listing = sorted(os.listdir(self.repro)) if os.path.isdir(self.repro) else None
        self.assertTrue(os.path.exists(test), f"{self.NAME}: test_repro.py written: {listing}")
        return test

    def test_repro_test_written(self):
        self.repro_test()

    def test_repro_test_runs_on_the_export_device(self):
        device_line = f"DEVICE = '{self.device}"  # 'cuda:0' where the export was on cuda:0
        self.assertTrue(device_line in open(self.repro_test()).read(),
                        f"{self.NAME}: the test runs on the device of the export ({device_line})")

    def run_repro_test(self, command):
        q = subprocess.run(command, capture_output=True, text=True, cwd=self.tmp)
        return q.returncode, q.stdout + q.stderr

    def test_repro_test_fails_under_the_planted_torch(self):
        code, said = self.run_repro_test([self.planted, self.repro_test()])
        ok = code != 0 and "FAILED" in said
        self.assertTrue(ok, f"{self.NAME}: python test_repro.py fails under the planted torch: {code} "
                            f"{'' if ok else said[-400:]}")

    def test_repro_test_passes_under_the_stock_torch(self):
        code, said = self.run_repro_test([sys.executable, self.repro_test()])
        ok = code == 0 and ("OK" in said or "1 passed" in said)
        self.assertTrue(ok, f"{self.NAME}: python test_repro.py passes under the stock torch: {code} {'' if ok else said[-400:]}")

    def test_repro_test_passes_under_pytest(self):
        """Collected and passing as a pytest file under the stock torch (its failing twin is the planted torch's)."""
        if not importlib.util.find_spec("pytest"):
            self.skipTest(f"{self.NAME}: no pytest in this Python: test_repro.py run with python only")
        code, said = self.run_repro_test([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", self.repro_test()])
        ok = code == 0 and ("OK" in said or "1 passed" in said)
        self.assertTrue(ok, f"{self.NAME}: pytest test_repro.py passes under the stock torch: {code} {'' if ok else said[-400:]}")


class OpLevel(PlantedSigmoid, CliTestCase):
    """sigmoid's result 1% off wherever it is lowered: pt2diff names sigmoid alone (not on the CPU: recheck's test has it)."""

    NAME, WHERE, KIND, NODES, ON_CPU = "op-level", "", "single_op", ["sigmoid"], False


class FusedWindow(PlantedSigmoid, CliTestCase):
    """sigmoid 1% off only with a pointwise input fused into its kernel: pt2diff names the window add .. sigmoid."""

    NAME, WHERE, KIND, NODES = "fused window", "fused", "window", ["add", "sigmoid"]


if __name__ == "__main__":
    unittest.main()
