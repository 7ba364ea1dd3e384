"""A graph exported on a GPU meets the Inductor worker. A ctest, label inductor (tests/cli_case.py says how to run it
alone).

- By default pt2diff runs on the device the graph was exported on (cuda:0) when this machine has it.
  Where pt2diff's torch has no CUDA, the default is the CPU (the report says the graph was exported on
  cuda:0 and what runs differently), and an explicit --device cuda is one clear line naming the remedy
  and exit code 2, before anything runs.
- With --device cpu the worker loads the GPU archive on the CPU (weights, sample inputs and baked
  devices moved, fused attention as math attention) and Inductor's result is as close to CUDA eager
  as pt2diff's CPU eager is: its RMSE to the float64 module within 2x CUDA eager's (same()'s fp32
  multiplier), on the plain and the masked attention.
- The exploded compile of the bf16 GPU export (cuDNN attention) asks only for what the graph reads or
  returns: every op's output gets a compiled local error, the parts nothing reads (attention's unset
  logsumexp and RNG state) none.
"""
import json
import os
import subprocess
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


class GpuExportCase(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.gpu_fixtures = os.path.join(cls.fixtures, "cuda")

    @classmethod
    def paths(cls, name):
        """fixtures/cuda/NAME.pt2 and its inputs."""
        return os.path.join(cls.gpu_fixtures, name + ".pt2"), os.path.join(cls.gpu_fixtures, name + "_inputs.pt")


class WithoutCuda(GpuExportCase):
    """Where pt2diff's torch has no CUDA: the default device is the CPU, said so; --device cuda is one line, exit 2."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if torch.cuda.is_available():
            raise unittest.SkipTest("this machine has CUDA: the GPU export runs where it was exported")
        graph, inputs = cls.paths("attention_cuda_fp32")
        cls.on_cuda = subprocess.run([cls.cli, graph, inputs, "--device", "cuda"], capture_output=True, text=True)
        cls.by_default = subprocess.run([cls.cli, graph, inputs], capture_output=True, text=True)

    def test_device_cuda_is_one_line(self):
        """--device cuda without a GPU: one stderr line naming the remedy, exit 2."""
        run = self.on_cuda
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        self.assertTrue(run.returncode == 2 and len(lines) == 1 and "sees no CUDA device" in lines[0]
                        and "--device cpu" in lines[0],
                        f"--device cuda without a GPU: exit {run.returncode}, stderr {run.stderr!r}")

    def test_default_device_is_the_cpu_said_so(self):
        """The default device without a GPU: Inductor on the CPU, and the report says the graph was exported on cuda:0."""
        run = self.by_default
        self.assertTrue(run.returncode == 0 and "compiled = inductor (cpu)" in run.stdout
                        and "warning: the graph was exported on cuda:0" in run.stdout,
                        f"default device without a GPU: exit {run.returncode}; the report does not say what ran where:\n"
                        f"{run.stdout}\n{run.stderr}")


class Fp32AttentionOnTheCpu(GpuExportCase):
    """--device cpu on the fp32 attention exports, plain and masked: Inductor as close to fp64 as CUDA eager."""

    NAMES = ("attention_cuda_fp32", "attention_cuda_masked_fp32")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {name: subprocess.run([cls.cli, *cls.paths(name), "--device", "cpu", "--save-outputs",
                                          os.path.join(cls.tmp, name + ".pt")], capture_output=True, text=True)
                    for name in cls.NAMES}

    def test_agrees(self):
        """Each export compiled for the CPU exits 0 and agrees."""
        for name in self.NAMES:
            with self.subTest(name):
                run = self.runs[name]
                self.assertTrue(run.returncode == 0 and "AGREE" in run.stdout and "FAILED" not in run.stdout,
                                f"{name} --device cpu: exit {run.returncode}\n{run.stdout}\n{run.stderr}")

    def test_within_2x_cuda_eagers_rmse_to_fp64(self):
        """Inductor on the CPU: its RMSE to the float64 module within 2x CUDA eager's."""
        for name in self.NAMES:
            with self.subTest(name):
                run = self.runs[name]
                self.assertEqual(run.returncode, 0, f"{name} --device cpu: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
                (compiled,), _, _ = torch.load(os.path.join(self.tmp, name + ".pt"), weights_only=True)
                (cuda,) = torch.load(os.path.join(self.gpu_fixtures, name + "_cuda_expected.pt"), weights_only=True)
                (truth,) = torch.load(os.path.join(self.gpu_fixtures, name + "_fp64_expected.pt"), weights_only=True)
                ratio = rmse(compiled, truth) / rmse(cuda, truth)
                self.assertLessEqual(ratio, 2.0, f"{name}: Inductor on the CPU is {ratio:.2f}x farther from fp64 than CUDA eager "
                                                 f"(RMSE to fp64 {rmse(compiled, truth):.3e})")


class Bf16ExplodedCompile(GpuExportCase):
    """The exploded compile of the bf16 GPU export (cuDNN attention) on the CPU asks only for what the graph reads."""

    NAME = "attention_cuda_bf16"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        report = os.path.join(cls.tmp, "report.json")
        cls.result = subprocess.run([cls.cli, *cls.paths(cls.NAME), "--device", "cpu", "--json", report],
                                    capture_output=True, text=True)
        cls.parsed = json.load(open(report)) if cls.result.returncode == 0 else None

    def report(self):
        run = self.result
        self.assertIsNotNone(self.parsed, f"{self.NAME} --device cpu: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
        return self.parsed

    def test_graph_and_exploded_compiles(self):
        """The graph's compile and the exploded one, both ok."""
        compiles = [(k["what"], k["ok"]) for k in self.report()["compiles"]]
        self.assertEqual(compiles, [("graph", True), ("exploded", True)], f"{self.NAME}: compiles {compiles}")

    def test_compiled_local_errors_of_what_is_read(self):
        """Every value the graph reads or returns gets a compiled local error, the unread parts none."""
        values = [v for n in self.report()["nodes"] for v in n["values"]]
        unread = [v["name"] for v in values if "_unused_" in v["name"] or not v["compared"]]
        measured = {v["name"] for v in values if v.get("compiled_local")}
        self.assertEqual(measured, {v["name"] for v in values} - set(unread),
                         f"{self.NAME}: compiled local errors for {sorted(measured)}, unread parts {unread}")


if __name__ == "__main__":
    unittest.main()
