"""The kernel table with the real Inductor. A ctest, label inductor, about 3 min on 2 cores (tests/cli_case.py says
how to run it alone).

- Clean graphs: the compiled code is observed, buffers are judged, none fails (no false alarm), and
  the report is valid against docs/report.schema.json.
- A bug planted in Inductor's lowering of relu (tests/engine/localize/lowering_bug_worker.py): the
  first failing kernel is relu's, named from the one compile and run that gave the verdict; localization,
  with its own compiles, names the same node.
- The same bug in div (the softmax's input scaled), which Inductor fuses with layer norm, softmax and
  gelu into one kernel: the first failing kernel is that fused one.
- The op inside the failing kernel (kernels.inside): relu's kernel names relu; the fused layer-norm/softmax/
  gelu kernel names div (the graph's divide, which Inductor computes inline in that kernel without listing
  it among the kernel's nodes), each within 1 + ceil(log2 |nodes|) compiles, and `--repro DIR` saves that
  kernel's generated code beside the repro.
- NaN origin: a NaN/Inf made by the compiled relu (its lowering planted to return log(-relu(x))) is
  "compiler" at relu in cpp_fused_relu_0; a NaN already in the input is "input".
- Where there is no map, the report says why in one line: --no-kernel-map, a backend that does not
  observe (fault), a worker that does not offer it (python/examples/eager_worker.py).

With PT2DIFF_TEST_DEVICE=cuda (scripts/gpu_test.sh) every run is `--device cuda`: the map is read from
the Triton wrapper code, so kernels are named triton_*, and the "no map" checks (device independent) are skipped.
"""
import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
BUG_WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
BUG = f"external:{sys.executable} {BUG_WORKER}"
sys.path.insert(0, os.path.join(ROOT, "tests"))
from cli_case import DEVICE, CliTestCase  # noqa: E402

KERNEL_PREFIX = "triton_" if DEVICE == "cuda" else "cpp_"


class KernelMapCase(CliTestCase):
    @classmethod
    def run_cli(cls, name, *flags, env=None):
        """pt2diff on fixtures/NAME.pt2 with FLAGS on the test's device: (the process, the report or None)."""
        flags = (*flags, "--device", cls.device)
        base = name[:-5] if name.endswith("_core") else name
        report = os.path.join(cls.tmp, name + ".json")
        if os.path.exists(report):
            os.remove(report)
        p = subprocess.run([cls.cli, os.path.join(cls.fixtures, name + ".pt2"), os.path.join(cls.fixtures, base + "_inputs.pt"),
                            "--json", report, *flags], capture_output=True, text=True, env={**os.environ, **(env or {})})
        r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
        return p, r


class CleanGraphs(KernelMapCase):
    """Clean graphs: the compiled code observed, buffers judged, none failing."""

    NAMES = ("mlp", "ln_softmax_gelu_core", "attention_core", "conv_bn_relu_core")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {name: cls.run_cli(name, "--no-exploded", "--no-localize") for name in cls.NAMES}

    def report(self, name):
        p, r = self.runs[name]
        self.assertIsNotNone(r, f"{name}: pt2diff exited {p.returncode}: {p.stderr.strip()[-300:]}")
        return r

    def test_buffers_judged_none_failing(self):
        """Every clean graph's kernels are observed and judged, none failing, and the verdict agrees."""
        for name in self.NAMES:
            with self.subTest(name):
                r = self.report(name)
                k = r["kernels"]
                self.assertTrue(k["available"] and k["judged"] >= 1 and k["first_failing"] is None and r["verdict"] == "agree",
                                f"{name}: {len(k['kernels'])} kernel calls, {k['observed']} buffers observed, "
                                f"{k['judged']} judged, none failing ({k['unavailable'] or 'available'}; verdict {r['verdict']})")

    def test_reports_are_valid(self):
        """Every clean graph's report is valid against docs/report.schema.json."""
        for name in self.NAMES:
            with self.subTest(name):
                self.assertValidReport(self.report(name))


class PlantedBugs(KernelMapCase):
    """A bug planted in one lowering: the first failing kernel, the op inside it, its code beside the repro."""

    # fixture: (planted op, a node of the failing kernel, the op the search inside it names)
    CASES = {"mlp": ("relu", "relu", "relu"), "ln_softmax_gelu_core": ("div.Tensor", "_softmax", "div")}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {}
        for name, (op, _, _) in cls.CASES.items():
            p, r = cls.run_cli(name, "--compiled", BUG, "--repro", os.path.join(cls.tmp, "repro_" + name),
                               env={"PT2DIFF_PLANT_OP": op})
            print("\n".join(line for line in p.stdout.splitlines() if "kernel" in line or "generated code" in line))
            cls.runs[name] = p, r

    def report(self, name):
        p, r = self.runs[name]
        self.assertIsNotNone(r, f"{name} with a bug in the {self.CASES[name][0]} lowering: pt2diff exited {p.returncode}: "
                                f"{p.stderr.strip()[-300:]}")
        return r

    def test_first_failing_kernel(self):
        """The first failing kernel holds the planted op's node, from the verdict's one compile."""
        for name, (op, node, _) in self.CASES.items():
            with self.subTest(name):
                r = self.report(name)
                k = r["kernels"]
                first = k["kernels"][k["first_failing"]] if k["first_failing"] is not None else None
                graph_compiles = [c for c in r["compiles"] if c["what"] == "graph"]
                self.assertTrue(r["verdict"] == "diverged" and first is not None and node in first["nodes"]
                                and len(graph_compiles) == 1 and first["name"].startswith(KERNEL_PREFIX),
                                f"{name} with a bug in the {op} lowering: the first failing kernel is "
                                f"{first and first['name']} (nodes {first and first['nodes']}), from the verdict's one compile")

    def test_reports_are_valid(self):
        """Each report is valid against docs/report.schema.json."""
        for name in self.CASES:
            with self.subTest(name):
                self.assertValidReport(self.report(name))

    def test_op_inside_the_kernel(self):
        """The search inside the first failing kernel names the planted op within its bound of compiles."""
        for name, (_, _, inner) in self.CASES.items():
            with self.subTest(name):
                k = self.report(name)["kernels"]
                first = k["kernels"][k["first_failing"]] if k["first_failing"] is not None else None
                inside = k.get("inside") or {}
                self.assertTrue(inside.get("kind") == "single_op" and inside.get("op") == inner
                                and inside.get("kernel") == (first or {}).get("name")
                                and 1 <= inside.get("compiles", 99) <= inside.get("bound", 0)
                                and inside.get("bound") == 1 + math.ceil(math.log2(len(inside["nodes"]))),
                                f"{name}: inside {inside.get('kernel')}: {inside.get('summary')} "
                                f"({inside.get('compiles')} compiles, bound {inside.get('bound')})")

    def test_kernel_code_beside_the_repro(self):
        """--repro saves the failing kernel's generated code (Triton or C++) in the repro's folder."""
        for name in self.CASES:
            with self.subTest(name):
                inside = self.report(name)["kernels"].get("inside") or {}
                code_file = inside.get("code_file") or ""
                self.assertTrue(inside.get("code") and os.path.isfile(code_file) and open(code_file).read() == inside["code"]
                                and os.path.dirname(code_file) == os.path.join(self.tmp, "repro_" + name)
                                and ("def triton_" in inside["code"] if DEVICE == "cuda" else "extern \"C\"" in inside["code"]),
                                f"{name}: the kernel's generated code saved beside the repro: {code_file} "
                                f"({len(inside.get('code') or '')} chars)")

    def test_relu_localized(self):
        """mlp's failing buffer is relu's, and localization, with its own compiles, names relu too."""
        r = self.report("mlp")
        culprit = (r.get("localization") or {}).get("culprit") or {}
        self.assertTrue(r["kernels"]["first_failing_node"] == "relu" and culprit.get("nodes") == ["relu"],
                        f"mlp: its failing buffer is relu's, and localization ({(r.get('localization') or {}).get('compiles')} "
                        f"compiles) names {culprit.get('nodes')}")


class NonfiniteOrigin(KernelMapCase):
    """Where a NaN comes from: made by the compiled relu (its lowering returns log(-relu(x))), or already in an input."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.made = cls.run_cli("mlp", "--compiled", BUG, "--no-localize",
                               env={"PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_ERROR": "nan"})
        import torch
        (x,) = torch.load(os.path.join(cls.fixtures, "mlp_inputs.pt"), weights_only=True)
        x = x.clone()
        x[0, 0] = float("nan")
        torch.save((x,), os.path.join(cls.tmp, "nan_inputs.pt"))
        report = os.path.join(cls.tmp, "nan.json")
        p = subprocess.run([cls.cli, os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.tmp, "nan_inputs.pt"),
                            "--json", report, "--no-exploded", "--no-localize", "--device", cls.device],
                           capture_output=True, text=True)
        cls.in_input = p, json.load(open(report)) if os.path.exists(report) else None

    def test_nan_made_by_the_compiled_relu(self):
        """The origin is "compiler", at relu, in relu's kernel."""
        p, r = self.made
        origin = (r or {}).get("kernels", {}).get("nonfinite_origin") or {}
        self.assertTrue(origin.get("kind") == "compiler" and origin.get("node") == "relu"
                        and (origin.get("kernel") or "").startswith(KERNEL_PREFIX) and "relu" in origin.get("kernel"),
                        f"a NaN made by the compiled relu: {origin or p.stderr.strip()[-300:]}")

    def test_nan_in_the_input(self):
        """The origin is "input", at the input x."""
        p, r = self.in_input
        origin = (r or {}).get("kernels", {}).get("nonfinite_origin") or {}
        self.assertTrue(origin.get("kind") == "input" and origin.get("node") == "x",
                        f"a NaN in the input: {origin or p.stderr.strip()[-300:]}")


class NoKernelMap(KernelMapCase):
    """Where there is no map the report says why, in one line (device independent: checked on the CPU only)."""

    EAGER_WORKER = os.path.join(ROOT, "python", "examples", "eager_worker.py")
    SPECS = {"fault backend": ("fault:relu:noise=0.01", "does not observe"),
             "external worker without the map": (f"external:{sys.executable} {EAGER_WORKER}", "does not offer it")}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if cls.device != "cpu":
            raise unittest.SkipTest(f"the checks of no kernel map are device independent: run on the CPU, not {cls.device}")
        cls.not_asked = cls.run_cli("mlp", "--no-kernel-map", "--no-exploded", "--no-localize")
        cls.runs = {label: cls.run_cli("mlp", "--compiled", spec, "--no-exploded", "--no-localize")
                    for label, (spec, _) in cls.SPECS.items()}

    def test_no_kernel_map_flag(self):
        """--no-kernel-map: not asked, and no kernel table in the text report."""
        p, r = self.not_asked
        self.assertTrue(r is not None and not r["kernels"]["asked"]
                        and "kernels" not in p.stdout.split("outputs")[1].split("per node")[0],
                        "--no-kernel-map: not asked, no table in the text report")

    def test_backends_without_a_map_say_why(self):
        """A backend that does not observe and a worker that does not offer the map: asked, unavailable, one line why."""
        for label, (_, words) in self.SPECS.items():
            with self.subTest(label):
                p, r = self.runs[label]
                line = next((line for line in p.stdout.splitlines() if line.startswith("kernels: no kernel map")), "")
                self.assertTrue(r is not None and r["kernels"]["asked"] and not r["kernels"]["available"]
                                and words in r["kernels"]["unavailable"] and words in line,
                                f"{label}: {line or p.stderr.strip()[-300:]}")


if __name__ == "__main__":
    unittest.main()
