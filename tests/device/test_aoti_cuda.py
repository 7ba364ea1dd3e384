"""On a CUDA machine: AOTInductor packages built for cuda, run by pt2diff on the GPU (docs/usage.md, "AOTInductor").
Part of the GPU suite (scripts/gpu_test.sh runs it by tests/python/run_tests.py in three parts, by node id: checks 1, 2
and 5 are the classes CleanPackage and CompiledAoti, check 3 and check 4 tests of PlantedPackage; tests/cli_case.py
says how); skipped where torch sees no CUDA device.

A bf16 decoder (models_cuda.TinyDecoder: RMSNorm, causal SDPA, a gated MLP) exported on cuda, its archive and
token ids written here, then:
1. a clean CUDA package (aoti_compile_and_package): `--compiled aoti:PKG` agrees on cuda:0, exit 0;
2. `--compiled aoti`: the archive compiled by AOTInductor in the worker on cuda agrees, with a kernel table of
   Triton kernels read from the package's own save calls (every judged buffer passes);
3. a package built with a bug planted in Inductor's lowering of rsqrt (tests/engine/localize/planted_lowering.py:
   the lowered result scaled by 1.05 inside the generated Triton kernel, the FX graph untouched): pt2diff with the
   same compiler as twin (PT2DIFF_WORKER=lowering_bug_worker.py) fails, names the first failing kernel and the op
   rsqrt inside it, and localizes to an rsqrt node; `--repro` keeps that kernel's Triton source;
4. the same package with the stock compiler as twin: the one line saying the package was not built by this
   torch/config from this archive;
5. AOTI's checklist, each one line: the cuda package run with --device cpu (exit 2, the remedy), a CPU package run
   with --device cuda (exit 2), token ids whose strides are not the compiled ones (exit 4, the input named).
Each class builds the packages it needs side by side in setUpClass; the compile times (package, instrumented AOTI
compile of the archive, the JIT compile of the same graph) are printed and in the messages.
"""
import json
import os
import subprocess
import sys
import time
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)
from cli_case import CliTestCase  # noqa: E402
from models_cuda import TinyDecoder, seeded_decoder  # noqa: E402

BUG_WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
PLANT = {"PT2DIFF_PLANT_OP": "rsqrt", "PT2DIFF_PLANT_ERROR": "0.05"}
ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


def run(cmd, env=None):
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout, r.stderr, time.time() - start


def package(archive, path, planted=False):
    """Starts building an AOTI package of `archive` in a fresh Python (planted: with the lowering bug); returns
    the process and its start time. The builds run side by side: a GPU machine has the cores."""
    code = ("import sys, torch, torch._inductor.config as c\n"
            + ("sys.path.insert(0, sys.argv[3]); import planted_lowering; planted_lowering.plant()\n" if planted else "")
            + "with c.patch({'force_disable_caches': True}):\n"
              "    torch._inductor.aoti_compile_and_package(torch.export.load(sys.argv[1]), package_path=sys.argv[2])\n")
    proc = subprocess.Popen([sys.executable, "-c", code, archive, path, os.path.join(ROOT, "tests", "engine", "localize")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(PLANT if planted else {})})
    return proc, time.time()


def report(path):
    with open(path) as f:
        return json.load(f)


class AotiOnCuda(CliTestCase):
    """The bf16 decoder exported on cuda (cls.archive, cls.inputs, cls.ids) and the packages named in PACKAGES
    ("clean cuda": cls.clean, "planted cuda": cls.buggy, "cpu": cls.cpu_pkg of a CPU export of the decoder,
    cls.cpu_archive and cls.cpu_inputs) built side by side, in setUpClass."""

    PACKAGES = ()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        model, cls.ids = seeded_decoder()
        tmp = cls.tmp
        cls.archive, cls.inputs = os.path.join(tmp, "decoder.pt2"), os.path.join(tmp, "decoder_inputs.pt")
        torch.export.save(torch.export.export(model, (cls.ids,)), cls.archive)
        torch.save((cls.ids,), cls.inputs)
        cls.clean, cls.buggy = os.path.join(tmp, "clean.pt2"), os.path.join(tmp, "rsqrt_bug.pt2")
        cls.cpu_archive, cls.cpu_inputs, cls.cpu_pkg = (os.path.join(tmp, n) for n in ("cpu.pt2", "cpu_inputs.pt", "cpu_pkg.pt2"))
        if "cpu" in cls.PACKAGES:
            cpu_model = TinyDecoder().to(torch.bfloat16).eval()
            torch.export.save(torch.export.export(cpu_model, (cls.ids.cpu(),)), cls.cpu_archive)
            torch.save((cls.ids.cpu(),), cls.cpu_inputs)
        sources = {"clean cuda": (cls.archive, cls.clean, False), "planted cuda": (cls.archive, cls.buggy, True),
                   "cpu": (cls.cpu_archive, cls.cpu_pkg, False)}
        builds = {what: package(*sources[what]) for what in cls.PACKAGES}
        times, failed = {}, []
        for what, (proc, start) in builds.items():
            _, err = proc.communicate()
            times[what] = time.time() - start
            if proc.returncode != 0:
                failed.append(f"building the {what} package failed:\n{err[-4000:]}")
        if failed:
            raise AssertionError("\n".join(failed))
        if times:
            print("package builds, side by side (fresh Python each, caches off): "
                  + ", ".join(f"{what} {t:.1f} s" for what, t in times.items()))

    def check(self, ok, what, detail=""):
        """Asserts `ok`; the message is WHAT and the end of DETAIL (pt2diff's output)."""
        self.assertTrue(ok, what + ("\n" + detail[-6000:] if detail else ""))


class CleanPackage(AotiOnCuda):
    """Checks 1 and 5: a clean CUDA package of the decoder, and a CPU package, built side by side."""

    PACKAGES = ("clean cuda", "cpu")

    def test_clean_package_agrees(self):
        """1. The clean package agrees on the GPU: exit 0, AGREE, eager on cuda."""
        j = os.path.join(self.tmp, "clean.json")
        rc, out, err, secs = run([self.cli, self.archive, self.inputs, "--device", "cuda", "--compiled", "aoti:" + self.clean,
                                  "--json", j], ENV)
        r = report(j) if os.path.exists(j) else {}
        self.check(rc == 0 and "AGREE" in out and r.get("devices", {}).get("native", "").startswith("cuda"),
                   f"a clean CUDA package of the bf16 decoder agrees on cuda ({secs:.1f} s)", out + err)

    def test_cuda_package_with_device_cpu(self):
        """5. AOTI's checklist: the cuda package run with --device cpu: exit 2, one line with the remedy."""
        rc, out, err, _ = run([self.cli, self.archive, self.inputs, "--device", "cpu", "--compiled", "aoti:" + self.clean], ENV)
        line = [l for l in (out + err).splitlines() if "was compiled for cuda" in l]
        self.check(rc == 2 and len(line) == 1 and "--device cuda" in line[0],
                   "the cuda package with --device cpu: exit 2, one line", out + err)

    def test_cpu_package_with_device_cuda(self):
        """5. AOTI's checklist: a CPU package run with --device cuda: exit 2, one line."""
        rc, out, err, _ = run([self.cli, self.cpu_archive, self.cpu_inputs, "--device", "cuda", "--compiled",
                               "aoti:" + self.cpu_pkg], ENV)
        line = [l for l in (out + err).splitlines() if "was compiled for cpu" in l]
        self.check(rc == 2 and len(line) == 1, "a CPU package with --device cuda: exit 2, one line", out + err)

    def test_ids_with_other_strides(self):
        """5. AOTI's checklist: token ids whose strides are not the compiled ones: exit 4, the input named."""
        strided = os.path.join(self.tmp, "strided_inputs.pt")
        torch.save((self.ids.t().contiguous().t(),), strided)
        rc, out, err, _ = run([self.cli, self.archive, strided, "--device", "cuda", "--compiled", "aoti:" + self.clean], ENV)
        line = [l for l in (out + err).splitlines() if "guards" in l and "'ids'" in l]
        self.check(rc == 4 and len(line) >= 1, "token ids with other strides: exit 4, the input named", out + err)


class CompiledAoti(AotiOnCuda):
    """Check 2: `--compiled aoti`, the archive compiled by AOTInductor in the worker on cuda, instrumented; no
    package built here."""

    def test_compiled_aoti_agrees_with_a_triton_kernel_table(self):
        """2. It agrees, with a kernel table of Triton kernels and no failing one; the JIT path's compile beside it."""
        j = os.path.join(self.tmp, "aoti.json")
        rc, out, err, secs = run([self.cli, self.archive, self.inputs, "--device", "cuda", "--compiled", "aoti", "--json", j],
                                 ENV)
        r = report(j) if os.path.exists(j) else {}
        k = r.get("kernels", {})
        aoti_graph = next((c for c in r.get("compiles", []) if c["what"] == "graph"), {})
        j2 = os.path.join(self.tmp, "jit.json")
        rc2, _, _, secs2 = run([self.cli, self.archive, self.inputs, "--device", "cuda", "--json", j2], ENV)
        jit_graph = next((c for c in (report(j2) if os.path.exists(j2) else {}).get("compiles", []) if c["what"] == "graph"), {})
        times = (f"whole-graph compile with the kernel map, caches off: AOTI {aoti_graph.get('compile_seconds', 0):.1f} s, "
                 f"JIT {jit_graph.get('compile_seconds', 0):.1f} s; runs {secs:.1f} s and {secs2:.1f} s (rc {rc2})")
        print(times)
        self.check(rc == 0 and k.get("available") and k.get("first_failing") is None
                   and any(c.get("name", "").startswith("triton") for c in k.get("kernels", [])),
                   f"--compiled aoti on cuda agrees, kernel table of {len(k.get('kernels', []))} calls ({secs:.1f} s); {times}",
                   out + err)


class PlantedPackage(AotiOnCuda):
    """Checks 3 and 4: a package built with a bug planted in Inductor's lowering of rsqrt. gpu_test.sh runs check 3
    (two tests of one pt2diff run, made by the first of them that runs) and check 4 each in its own part."""

    PACKAGES = ("planted cuda",)
    same_twin = None

    def same_twin_run(self):
        """Check 3's run, once for the class: the planted package with the same compiler as twin
        (PT2DIFF_WORKER=lowering_bug_worker.py) and --repro: (its exit code, output, report, the repro folder, seconds)."""
        cls = type(self)
        if cls.same_twin is None:
            j, repro = os.path.join(self.tmp, "bug.json"), os.path.join(self.tmp, "repro")
            rc, out, err, secs = run([self.cli, self.archive, self.inputs, "--device", "cuda", "--compiled", "aoti:" + self.buggy,
                                      "--json", j, "--repro", repro], {**ENV, **PLANT, "PT2DIFF_WORKER": BUG_WORKER})
            cls.same_twin = (rc, out + err, report(j) if os.path.exists(j) else {}, repro, secs)
        return cls.same_twin

    @staticmethod
    def first_failing(r):
        """The report's first failing kernel and what it says is inside it ({} where none)."""
        k = r.get("kernels", {})
        return (k["kernels"][k["first_failing"]] if k.get("first_failing") is not None else {}), (k.get("inside") or {})

    def test_planted_bug_named_at_its_kernel_and_op(self):
        """3. Exit 1, the first failing kernel a Triton one with rsqrt inside, localized to an rsqrt node, one
        instrumented compile."""
        rc, output, r, _, secs = self.same_twin_run()
        first, inside = self.first_failing(r)
        culprit = (r.get("localization") or {}).get("culprit") or {}
        instrumented = [c for c in r.get("compiles", []) if c["what"] == "instrumented"]
        self.check(rc == 1 and first.get("name", "").startswith("triton") and "rsqrt" in str(inside.get("op", ""))
                   and any(n.startswith("rsqrt") for n in culprit.get("nodes", [])) and len(instrumented) == 1,
                   f"a CUDA package with rsqrt's lowering planted: kernel {first.get('name')} (nodes {first.get('nodes')}), "
                   f"op {inside.get('op')}, localized to {culprit.get('nodes')}; instrumented compile "
                   f"{instrumented[0]['compile_seconds'] if instrumented else -1:.1f} s ({secs:.1f} s)", output)

    def test_repro_keeps_the_kernels_triton_source(self):
        """3. --repro keeps the first failing kernel's Triton source, the planted 1.05 in it."""
        _, _, r, repro, _ = self.same_twin_run()
        first, inside = self.first_failing(r)
        code_file = inside.get("code_file") or ""
        code = open(code_file).read() if code_file and os.path.exists(code_file) else ""
        self.check(code_file == os.path.join(repro, f"{first.get('name')}.py") and "@triton" in code and "1.05" in code,
                   f"--repro keeps that kernel's Triton source, the planted 1.05 in it ({code_file})", code[:3000])

    def test_stock_compiler_as_twin_not_reproduced(self):
        """4. The planted package with the stock compiler as twin: exit 1, the one line saying it does not reproduce."""
        rc, out, err, secs = run([self.cli, self.archive, self.inputs, "--device", "cuda", "--compiled", "aoti:" + self.buggy],
                                 ENV)
        self.check(rc == 1 and "was not built by this torch and Inductor config from this archive" in out + err,
                   f"the same package, the stock compiler as twin: the not-reproduced line ({secs:.1f} s)", out + err)


if __name__ == "__main__":
    unittest.main()
