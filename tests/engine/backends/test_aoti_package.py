"""The aoti backend runs a user's AOTInductor package like Python does, and does AOTI's checklist first. A ctest,
labels inductor and slow: ~160 s, three packages built (tests/cli_case.py says how to run it alone).

1. A package built from fixtures/mlp.pt2 (torch._inductor.aoti_compile_and_package), run in Python with
   aoti_load_package: `pt2diff mlp.pt2 mlp_inputs.pt --compiled aoti:PACKAGE` gives the same outputs bit
   for bit, exits 0 and names the package.
2. AOTI's checklist, each one line before the package runs: a file that is not a package (exit 2); a
   package whose metadata says cuda, run on the CPU (exit 2, the device named with the remedy); an input
   whose strides are not those the package was compiled for (exit 4, the input named: AOTI's compiled
   code reads memory by its compiled strides, which AOTI_RUNTIME_CHECK_INPUTS=1 would check).
3. The package's own guards: a package built from a static re-export of fixtures/dynamic_batch.pt2 (batch
   6) agrees at batch 6; at batch 8, which the dynamic archive accepts, its own check refuses the input and
   pt2diff names it (exit 4).
4. `--compiled aoti` (the archive compiled by AOTInductor in the worker): agrees, its outputs are the package's
   of step 1 bit for bit (same torch, same config, same code), and its kernel table (read from the package's
   own save calls) has the three calls with every buffer passing.
5. Inside the package: a package built with a bug planted in Inductor's lowering of relu
   (tests/engine/localize/planted_lowering.py, scaled by 1.01 in the generated C++ kernel; the FX graph
   untouched). With that compiler as the twin (PT2DIFF_WORKER=lowering_bug_worker.py) pt2diff names the first
   failing kernel cpp_fused_relu_0, the op relu inside it, and localizes to relu, after one instrumented
   compile; `--repro` writes that kernel's C++ (the planted 1.01 in it) and a window repro whose command
   (`--compiled aoti`: the package is the whole graph's) reproduces the failure. With the stock compiler as twin
   it says, in one line, that the package was not built by this torch/config from this archive, and skips
   localization.
"""
import json
import shlex
import os
import subprocess
import sys
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "..", "python")
# The packages built here use the worker's Inductor cache (test_inductor_agreement.py says why: keyed by the CPU
# capability), its precompiled headers and its remembered vector-ISA probes, built there even with caches off:
# the kernels' C++ builds are shared with pt2diff's own compiles instead of being made twice.
sys.path.insert(0, PYTHON_DIR)
from pt2diff_worker.cli import (DEFAULT_CACHE_DIR, inductor_cache_dir, keep_precompiled_headers_in_cache,  # noqa: E402
                                remember_vec_isa_probes)

sys.path.pop(0)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(
    os.environ.get("PT2DIFF_INDUCTOR_CACHE") or os.path.expanduser(DEFAULT_CACHE_DIR), os.environ.get("ATEN_CPU_CAPABILITY", ""))
import torch  # noqa: E402

keep_precompiled_headers_in_cache()
remember_vec_isa_probes()
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402

BUG_WORKER = os.path.join(HERE, "..", "localize", "lowering_bug_worker.py")
PLANT = {"PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_ERROR": "1e-2"}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout, r.stderr


def planted_package(graph, path):
    """An AOTI package of `graph` built in a fresh Python with relu's lowering planted (caches off): the build's
    (exit code, stderr)."""
    code = ("import sys, torch, torch._inductor.config as c\n"
            "sys.path.insert(0, sys.argv[4]); from pt2diff_worker import cli\n"
            "cli.keep_precompiled_headers_in_cache(); cli.remember_vec_isa_probes()\n"
            "sys.path.insert(0, sys.argv[3]); import planted_lowering; planted_lowering.plant()\n"
            "with c.patch({'force_disable_caches': True}):\n"
            "    torch._inductor.aoti_compile_and_package(torch.export.load(sys.argv[1]), package_path=sys.argv[2])\n")
    r = subprocess.run([sys.executable, "-c", code, graph, path, os.path.dirname(BUG_WORKER), PYTHON_DIR],
                       capture_output=True, text=True, env={**os.environ, **PLANT})
    return r.returncode, r.stderr


def with_device_key(package, copy, device):
    """A copy of `package` whose metadata says it was built for `device`; returns how many metadata files it edited."""
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(copy, "w") as dst:
        edited = 0
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("_metadata.json"):
                meta = json.loads(data)
                meta["AOTI_DEVICE_KEY"] = device
                data = json.dumps(meta).encode()
                edited += 1
            dst.writestr(item, data)
    return edited


class MlpPackage(CliTestCase):
    """A package of fixtures/mlp.pt2 (steps 1, 2 and 4): through pt2diff as Python runs it, AOTI's checklist, and
    `--compiled aoti` giving the package's outputs."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.graph, cls.inputs_file = os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt")
        cls.package = os.path.join(cls.tmp, "mlp_package.pt2")
        torch._inductor.aoti_compile_and_package(torch.export.load(cls.graph), package_path=cls.package)
        cls.args = torch.load(cls.inputs_file, weights_only=True)
        cls.expected = torch._inductor.aoti_load_package(cls.package)(*cls.args)
        cls.saved = os.path.join(cls.tmp, "outputs.pt")
        cls.clean = run([cls.cli, cls.graph, cls.inputs_file, "--compiled", "aoti:" + cls.package, "--save-outputs", cls.saved])

        cls.not_a_package = run([cls.cli, cls.graph, cls.inputs_file, "--compiled", "aoti:" + cls.inputs_file])
        cuda_package = os.path.join(cls.tmp, "cuda_package.pt2")
        cls.edited = with_device_key(cls.package, cuda_package, "cuda")
        cls.cuda_package = run([cls.cli, cls.graph, cls.inputs_file, "--compiled", "aoti:" + cuda_package])
        strided = os.path.join(cls.tmp, "strided_inputs.pt")
        torch.save((cls.args[0].t().contiguous().t(),) + tuple(cls.args[1:]), strided)
        cls.strided = run([cls.cli, cls.graph, strided, "--compiled", "aoti:" + cls.package])

        # 4. --compiled aoti: the archive through AOTInductor in the worker, instrumented
        cls.saved_aoti, cls.report = os.path.join(cls.tmp, "aoti_outputs.pt"), os.path.join(cls.tmp, "aoti.json")
        cls.aoti = run([cls.cli, cls.graph, cls.inputs_file, "--compiled", "aoti", "--save-outputs", cls.saved_aoti,
                        "--json", cls.report])

    def test_clean_package_agrees_and_is_named(self):
        rc, out, err = self.clean
        self.assertTrue(rc == 0 and "aoti: " + self.package in out,
                        f"a clean package agrees and is named: exit {rc}: {out}\n{err}")

    def test_outputs_are_pythons(self):
        """The package's outputs through pt2diff are Python's aoti_load_package's bit for bit."""
        compiled, _, _ = torch.load(self.saved, weights_only=True)
        self.assertTrue(torch.equal(compiled[0], self.expected),
                        "its outputs through pt2diff are Python's aoti_load_package's bit for bit")

    def test_not_a_package(self):
        """A file that is not a package: one line, exit 2."""
        rc, out, err = self.not_a_package
        self.assertTrue(rc == 2 and "is not an AOTInductor package" in err,
                        f"a file that is not a package: one line, exit 2: {rc}\n{out}\n{err}")

    def test_cuda_package_on_the_cpu(self):
        """A package whose metadata says cuda, on the CPU: one line before anything runs, exit 2."""
        self.assertGreaterEqual(self.edited, 1, f"the package has metadata ({self.edited} files)")
        rc, out, err = self.cuda_package
        self.assertTrue(rc == 2 and "was compiled for cuda and this run is on cpu: run with --device cuda" in err
                        and not out.strip(),
                        f"a cuda package on the CPU: one line before anything runs, exit 2: {rc}\n{out}\n{err}")

    def test_input_in_another_layout(self):
        """An input whose strides are not the package's: named with its strides, exit 4."""
        rc, out, err = self.strided
        x = self.args[0]
        want = f"input 'x' has strides [1, {x.shape[0]}], the package was compiled for [{x.shape[1]}, 1]"
        self.assertTrue(rc == 4 and want in out,
                        f"an input in another layout: named with its strides, exit 4: {rc}\n{out}\n{err}")

    def test_compiled_aoti_agrees(self):
        rc, out, err = self.aoti
        self.assertTrue(rc == 0 and "compiled = aoti (cpu)" in out, f"--compiled aoti agrees: {rc}\n{out}\n{err}")

    def test_compiled_aoti_outputs_are_the_packages(self):
        """--compiled aoti's outputs are the package's bit for bit."""
        compiled, _, _ = torch.load(self.saved_aoti, weights_only=True)
        self.assertTrue(torch.equal(compiled[0], self.expected), "--compiled aoti's outputs are the package's bit for bit")

    def test_compiled_aoti_kernel_table(self):
        """--compiled aoti's kernel table: 3 calls, 3 buffers judged, none failing."""
        with open(self.report) as f:
            k = json.load(f)["kernels"]
        self.assertTrue(k["available"] and len(k["kernels"]) == 3 and k["first_failing"] is None and k["judged"] == 3,
                        "--compiled aoti's kernel table: 3 calls, 3 buffers judged, none failing: " + json.dumps(k)[:2000])


class StaticPackage(CliTestCase):
    """The package's own guards (step 3): a package of a static re-export of fixtures/dynamic_batch.pt2 (batch 6)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dyn_graph = os.path.join(cls.fixtures, "dynamic_batch.pt2")
        static = torch.export.export(torch.export.load(cls.dyn_graph).module(), (torch.randn(6, 16),))
        static_package = os.path.join(cls.tmp, "static_package.pt2")
        torch._inductor.aoti_compile_and_package(static, package_path=static_package)
        cls.runs = {}
        for batch in (6, 8):
            batch_inputs = os.path.join(cls.tmp, f"batch{batch}.pt")
            torch.save((torch.randn(batch, 16),), batch_inputs)
            cls.runs[batch] = run([cls.cli, cls.dyn_graph, batch_inputs, "--compiled", "aoti:" + static_package])

    def test_agrees_at_its_batch(self):
        rc, out, err = self.runs[6]
        self.assertEqual(rc, 0, f"a static package of a dynamic program agrees at its batch: {rc}\n{out}\n{err}")

    def test_its_guard_refuses_batch_8(self):
        """The package's own guard refuses batch 8, which the archive accepts: the input named, exit 4."""
        rc, out, err = self.runs[8]
        want = ("the package's own input check refused the inputs: input 'x' (input_handles[0]): "
                "unmatched dim value at 0, expected: 6")
        self.assertTrue(rc == 4 and want in out, "the package's own guard refuses batch 8, which the archive accepts: "
                                                 f"the input named: {rc}\n{out}\n{err}")


class PlantedPackage(CliTestCase):
    """Inside a package built with relu's lowering planted (step 5): its compiler as twin, then the stock one."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        graph, inputs_file = os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt")
        buggy = os.path.join(cls.tmp, "relu_bug.pt2")
        rc, err = planted_package(graph, buggy)
        if rc != 0:
            raise AssertionError(f"a package built with relu's lowering planted: exit {rc}\n{err[-3000:]}")
        report = os.path.join(cls.tmp, "bug.json")
        cls.repro = os.path.join(cls.tmp, "repro")
        cls.twin = run([cls.cli, graph, inputs_file, "--compiled", "aoti:" + buggy, "--json", report, "--repro", cls.repro],
                       {**PLANT, "PT2DIFF_WORKER": BUG_WORKER})
        with open(report) as f:
            cls.r = json.load(f)
        # the window's repro command, run without the exploded compile and localization (one AOTI compile of the
        # window is the check)
        cls.command = ((cls.r.get("localization") or {}).get("repro") or {}).get("command", "")
        cls.repro_run = run([cls.cli] + shlex.split(cls.command)[1:] + ["--no-exploded", "--no-localize"],
                            {**PLANT, "PT2DIFF_WORKER": BUG_WORKER}) if cls.command else None
        cls.stock = run([cls.cli, graph, inputs_file, "--compiled", "aoti:" + buggy])

    def test_its_compiler_as_twin_names_kernel_op_and_node(self):
        """Its compiler as twin: kernel cpp_fused_relu_0, op relu, localized to relu, one instrumented compile."""
        rc, out, err = self.twin
        k = self.r["kernels"]
        first = k["kernels"][k["first_failing"]]["name"] if k.get("first_failing") is not None else None
        culprit = (self.r.get("localization") or {}).get("culprit") or {}
        whats = [c["what"] for c in self.r["compiles"]]
        self.assertTrue(rc == 1 and first == "cpp_fused_relu_0" and (k.get("inside") or {}).get("op") == "relu"
                        and culprit.get("nodes") == ["relu"] and whats.count("instrumented") == 1
                        and "whose outputs fail too (linear_1)" in out,
                        "a planted package, its compiler as twin: kernel cpp_fused_relu_0, op relu, localized to relu, "
                        f"one instrumented compile: {rc}\n{out}\n{err}")

    def test_repro_keeps_the_kernels_cpp(self):
        """--repro: the failing kernel's C++ as AOTI generated it (kept at codegen: the package holds only its .so)."""
        k = self.r["kernels"]
        code_file = os.path.join(self.repro, "cpp_fused_relu_0.cpp")
        code = open(code_file).read() if os.path.exists(code_file) else ""
        self.assertTrue((k.get("inside") or {}).get("code_file") == code_file and "cpp_fused_relu_0" in code and "1.01" in code,
                        "--repro keeps the failing AOTI kernel's C++, the planted 1.01 in it: "
                        + (code[:3000] or json.dumps(k.get("inside"))))

    def test_repro_command_compiles_the_window_with_aoti(self):
        """The window repro's command compiles it with AOTInductor, not the whole graph's package."""
        self.assertTrue(self.command.endswith("--compiled aoti") or "--compiled aoti " in self.command,
                        "the repro's command compiles the window with AOTInductor, not the whole graph's package: "
                        + self.command)

    def test_repro_command_reproduces(self):
        """That command, with the same compiler, reproduces the failure (exit 1)."""
        self.assertIsNotNone(self.repro_run, "the report has no repro command")
        rc, out, err = self.repro_run
        self.assertEqual(rc, 1, f"that command, with the same compiler, reproduces the failure (exit 1): {rc}\n{out}\n{err}")

    def test_stock_compiler_as_twin(self):
        """The stock compiler as twin: one line says the package was not built from this archive; no localization."""
        rc, out, err = self.stock
        lines = [line for line in out.splitlines() if "was not built by this torch and Inductor config from this archive" in line]
        self.assertTrue(rc == 1 and len(lines) == 1 and "\nlocalization" not in out,
                        f"the same package, the stock compiler as twin: one line, no localization: {rc}\n{out}\n{err}")


if __name__ == "__main__":
    unittest.main()
