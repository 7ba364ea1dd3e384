"""Localization with the real Inductor and a real compiler bug. A ctest, label inductor (tests/cli_case.py says how to
run it alone; ~1-2 min).

The compiled side is tests/engine/localize/lowp_matmul_worker.py: Inductor with a post-grad pass that
computes float32 matrix products in bfloat16. For each fixture (the classes Mlp and AttentionCore) pt2diff must
report a divergence, localize it to a single op that is a matrix product, and that op must be the first one of the
failing cone (the earliest place the bug can show), within the compile budget. With PT2DIFF_TEST_DEVICE=cuda
(scripts/gpu_test.sh, which runs the class Mlp) the compiled side runs on the GPU (`--device cuda`); the checks that
judge CPU eager bit for bit against the compiler (StrictBf16Block at tol 0, DropoutRandomStream) are CPU-only.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402

WORKER = os.path.join(HERE, "lowp_matmul_worker.py")
MATMUL_OPS = {"aten.linear.default", "aten.addmm.default", "aten.mm.default", "aten.bmm.default", "aten.matmul.default"}


class LocalizedToTheFirstMatmul:
    """The tests of one fixture (`name`) compiled with the fp32-matmuls-in-bf16 bug: one pt2diff run, in setUpClass.
    A mixin: the classes below name the fixture."""

    name = ""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        base = cls.name[:-5] if cls.name.endswith("_core") else cls.name
        report = os.path.join(cls.tmp, cls.name + ".json")
        cls.process = subprocess.run([cls.cli, os.path.join(cls.fixtures, cls.name + ".pt2"),
                                      os.path.join(cls.fixtures, base + "_inputs.pt"),
                                      "--compiled", f"external:{sys.executable} {WORKER}", "--device", cls.device,
                                      "--json", report], capture_output=True, text=True)
        cls.report = json.load(open(report)) if cls.process.returncode == 1 and os.path.exists(report) else None

    def diverged(self):
        """The report, after checking that pt2diff said the compiled graph diverges."""
        self.assertEqual(self.process.returncode, 1,
                         f"{self.name}: expected exit 1 (diverged), got {self.process.returncode}: {self.process.stderr.strip()}")
        return self.report

    def test_localized_to_the_first_matmul(self):
        """A single op, the first matrix product of the graph, within the compile budget."""
        r = self.diverged()
        loc = r["localization"]
        culprit = loc["culprit"]
        first_matmul = next(n["name"] for n in r["nodes"] if n["op"] in MATMUL_OPS)
        ok = culprit["kind"] == "single_op" and culprit["nodes"] == [first_matmul] and loc["compiles"] <= loc["budget"]
        self.assertTrue(ok, f"{self.name}: {culprit['kind']} {culprit['nodes']} ({culprit['ops']}) after {loc['compiles']} "
                            f"compiles (budget {loc['budget']}, cone {loc['cone_size']}), localization {loc['seconds']:.1f} s, "
                            f"whole run {r['seconds']:.1f} s; first matmul is {first_matmul}")

    def test_hints(self):
        """The hints say the compiled side computes in a lower precision, and that no lever removes the divergence."""
        findings = {h["kind"]: h["finding"] for h in self.diverged()["localization"]["hints"]}
        hinted = findings.get("dtype_promotion") == "lower_precision_than_promotion" and \
            findings.get("compiler_lever") == "lever_does_not_remove_divergence"
        self.assertTrue(hinted, f"{self.name}: hints {findings}")


class Mlp(LocalizedToTheFirstMatmul, CliTestCase):
    """fixtures/mlp.pt2: its first linear is the culprit."""

    name = "mlp"


class AttentionCore(LocalizedToTheFirstMatmul, CliTestCase):
    """fixtures/attention_core.pt2 (the core ATen form of attention.pt2): its first matrix product is the culprit."""

    name = "attention_core"


class CpuOnly(CliTestCase):
    """Tests that judge CPU eager bit for bit against the compiler: skipped on another device."""

    @classmethod
    def setUpClass(cls):
        if cls.device != "cpu":
            raise unittest.SkipTest(f"judges CPU eager bit for bit against Inductor: CPU only (PT2DIFF_TEST_DEVICE={cls.device})")
        super().setUpClass()

    @classmethod
    def pt2diff(cls, name, *flags):
        """pt2diff on fixtures/NAME.pt2 with the stock Inductor on the CPU."""
        return subprocess.run([cls.cli, os.path.join(cls.fixtures, name + ".pt2"),
                               os.path.join(cls.fixtures, name + "_inputs.pt"), *flags], capture_output=True, text=True)


class StrictBf16Block(CpuOnly):
    """A real bf16 graph under the real Inductor, judged bit for bit (tol 0, multiplier 0): fused kernels keep fp32
    between bf16 ops, which the hints must say and the lever must confirm."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        report = os.path.join(cls.tmp, "bf16_block_strict.json")
        cls.pt2diff("bf16_block", "--tol", "0", "--low-precision-multiplier", "0", "--json", report)
        cls.localization = json.load(open(report))["localization"]

    def test_hints_say_the_compiled_side_keeps_higher_precision(self):
        loc = self.localization
        findings = {h["kind"]: h["finding"] for h in (loc or {}).get("hints", [])}
        ok = findings.get("dtype_promotion") == "compiled_keeps_higher_precision" and \
            findings.get("compiler_lever") == "lever_removes_divergence"
        self.assertTrue(ok, f"bf16_block (strict rule): culprit {loc and loc['culprit']['nodes']}, hints {findings}")


class DropoutRandomStream(CpuOnly):
    """Random ops: Inductor draws another stream. Seeded alike, the dropout op alone is judged, and the fallback_random
    lever must be named; with it the whole graph agrees."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        report = os.path.join(cls.tmp, "dropout.json")
        cls.pt2diff("dropout", "--json", report)
        cls.localization = json.load(open(report))["localization"]
        cls.with_lever = cls.pt2diff("dropout", "--inductor-config", "fallback_random=True")

    def test_dropout_alone_is_judged_and_the_lever_named(self):
        loc = self.localization
        lever = next((h for h in loc["hints"] if h["kind"] == "compiler_lever"), {})
        ok = loc["culprit"]["nodes"] == ["dropout"] and lever.get("finding") == "lever_removes_divergence" and \
            "fallback_random" in lever.get("summary", "")
        self.assertTrue(ok, f"dropout: {loc['culprit']['kind']} {loc['culprit']['nodes']}, "
                            f"lever: {lever.get('summary', '-')[:70]}")

    def test_fallback_random_agrees(self):
        """With --inductor-config fallback_random=True the whole graph agrees."""
        self.assertEqual(self.with_lever.returncode, 0, f"dropout with fallback_random=True: exit {self.with_lever.returncode}")


if __name__ == "__main__":
    unittest.main()
