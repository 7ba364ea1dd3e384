"""pt2diff's Inductor cache is kept per ATEN_CPU_CAPABILITY: a graph compiled with the CPU's own
vector ISA, then again under ATEN_CPU_CAPABILITY=default with the same --inductor-cache, compiles both
times. (Inductor's FX graph cache is not keyed by the capability: without a cache per capability the
second compile reuses AVX-512 code and fails to build, "'at::vec' has not been declared".)

A ctest, label inductor (tests/cli_case.py says how to run it alone); skipped where the CPU's own capability is
already `default`.
"""
import os
import subprocess
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402


class CachePerCapability(CliTestCase):
    """mlp compiled under the CPU's own capability, then under `default`, both with one --inductor-cache."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
            raise unittest.SkipTest("this CPU's ATen capability is already DEFAULT: nothing to switch between")
        cls.native = torch.backends.cpu.get_cpu_capability().lower()
        env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "TORCHINDUCTOR_CACHE_DIR")}
        args = [cls.cli, os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt"),
                "--compiled", "inductor", "--inductor-cache", cls.tmp]
        cls.runs = {capability: subprocess.run(args, capture_output=True, text=True, timeout=900,
                                               env=dict(env, **({"ATEN_CPU_CAPABILITY": capability} if capability else {})))
                    for capability in (None, "default")}  # in this order: the native compile fills the cache first

    def check(self, capability, label):
        p = self.runs[capability]
        self.assertEqual(p.returncode, 0, f"compiled and agreed under ATEN_CPU_CAPABILITY={label}: exit {p.returncode}\n"
                                          f"{p.stderr[-2000:]}")

    def test_the_cpus_own_capability(self):
        """Compiled and agreed under the CPU's own capability."""
        self.check(None, self.native)

    def test_default_after_the_cpus_own(self):
        """Compiled and agreed under ATEN_CPU_CAPABILITY=default, with the cache the native compile filled."""
        self.check("default", "default")


if __name__ == "__main__":
    unittest.main()
