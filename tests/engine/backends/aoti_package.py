#!/usr/bin/env python3
"""The aoti backend runs a user's AOTInductor package like Python does, and does AOTI's checklist first
(a ctest; slow: ~2 min, two package compiles).

    aoti_package.py PT2DIFF FIXTURES_DIR

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
   (`--compiled aoti`: the package is the whole graph's) reproduces the failure. With the stock compiler as twin it says, in one line, that the package was not built by this
   torch/config from this archive, and skips localization.
"""
import json
import shlex
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "..", "python")
# The packages built here use the worker's Inductor cache (inductor_agreement.py says why: keyed by the CPU
# capability), its precompiled headers and its remembered vector-ISA probes, built there even with caches off:
# the kernels' C++ builds are shared with pt2diff's own compiles instead of being made twice.
sys.path.insert(0, PYTHON_DIR)
from pt2diff_worker.cli import DEFAULT_CACHE_DIR, inductor_cache_dir, keep_precompiled_headers_in_cache, remember_vec_isa_probes  # noqa: E402

sys.path.pop(0)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(os.environ.get("PT2DIFF_INDUCTOR_CACHE") or os.path.expanduser(DEFAULT_CACHE_DIR),
                                                          os.environ.get("ATEN_CPU_CAPABILITY", ""))
import torch  # noqa: E402

keep_precompiled_headers_in_cache()
remember_vec_isa_probes()
BUG_WORKER = os.path.join(HERE, "..", "localize", "lowering_bug_worker.py")
PLANT = {"PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_ERROR": "1e-2"}


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout, r.stderr


def planted_package(graph, path):
    """An AOTI package of `graph` built in a fresh Python with relu's lowering planted (caches off)."""
    code = ("import sys, torch, torch._inductor.config as c\n"
            "sys.path.insert(0, sys.argv[4]); from pt2diff_worker import cli; cli.keep_precompiled_headers_in_cache(); cli.remember_vec_isa_probes()\n"
            "sys.path.insert(0, sys.argv[3]); import planted_lowering; planted_lowering.plant()\n"
            "with c.patch({'force_disable_caches': True}):\n"
            "    torch._inductor.aoti_compile_and_package(torch.export.load(sys.argv[1]), package_path=sys.argv[2])\n")
    r = subprocess.run([sys.executable, "-c", code, graph, path, os.path.dirname(BUG_WORKER), PYTHON_DIR], capture_output=True, text=True,
                       env={**os.environ, **PLANT})
    expect(r.returncode == 0, "a package built with relu's lowering planted", r.stderr[-3000:])


def expect(ok, what, out=""):
    if not ok:
        print(f"FAILED: {what}\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


def with_device_key(package, copy, device):
    """A copy of `package` whose metadata says it was built for `device`."""
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
    expect(edited >= 1, f"the package has metadata ({edited} files)")


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    graph, inputs_file = os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt")
    with tempfile.TemporaryDirectory() as tmp:
        package = os.path.join(tmp, "mlp_package.pt2")
        torch._inductor.aoti_compile_and_package(torch.export.load(graph), package_path=package)
        args = torch.load(inputs_file, weights_only=True)
        expected = torch._inductor.aoti_load_package(package)(*args)
        saved = os.path.join(tmp, "outputs.pt")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + package, "--save-outputs", saved])
        print(out)
        expect(rc == 0 and "aoti: " + package in out, "a clean package agrees and is named", f"exit {rc}: {err}")
        compiled, _, _ = torch.load(saved, weights_only=True)
        expect(torch.equal(compiled[0], expected), "its outputs through pt2diff are Python's aoti_load_package's bit for bit")

        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + inputs_file])
        expect(rc == 2 and "is not an AOTInductor package" in err, "a file that is not a package: one line, exit 2", f"{rc}\n{out}\n{err}")

        cuda_package = os.path.join(tmp, "cuda_package.pt2")
        with_device_key(package, cuda_package, "cuda")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + cuda_package])
        expect(rc == 2 and "was compiled for cuda and this run is on cpu: run with --device cuda" in err and not out.strip(),
               "a cuda package on the CPU: one line before anything runs, exit 2", f"{rc}\n{out}\n{err}")

        x = args[0]
        strided = os.path.join(tmp, "strided_inputs.pt")
        torch.save((x.t().contiguous().t(),) + tuple(args[1:]), strided)
        rc, out, err = run([pt2diff, graph, strided, "--compiled", "aoti:" + package])
        want = f"input 'x' has strides [1, {x.shape[0]}], the package was compiled for [{x.shape[1]}, 1]"
        expect(rc == 4 and want in out, "an input in another layout: named with its strides, exit 4", f"{rc}\n{out}\n{err}")

        dyn_graph = os.path.join(fixtures, "dynamic_batch.pt2")
        static = torch.export.export(torch.export.load(dyn_graph).module(), (torch.randn(6, 16),))
        static_package = os.path.join(tmp, "static_package.pt2")
        torch._inductor.aoti_compile_and_package(static, package_path=static_package)
        for batch in (6, 8):
            batch_inputs = os.path.join(tmp, f"batch{batch}.pt")
            torch.save((torch.randn(batch, 16),), batch_inputs)
            rc, out, err = run([pt2diff, dyn_graph, batch_inputs, "--compiled", "aoti:" + static_package])
            if batch == 6:
                expect(rc == 0, "a static package of a dynamic program agrees at its batch", f"{rc}\n{out}\n{err}")
            else:
                want = "the package's own input check refused the inputs: input 'x' (input_handles[0]): unmatched dim value at 0, expected: 6"
                expect(rc == 4 and want in out, "the package's own guard refuses batch 8, which the archive accepts: the input named",
                       f"{rc}\n{out}\n{err}")
        # 4. --compiled aoti: the archive through AOTInductor in the worker, instrumented
        saved_aoti, report = os.path.join(tmp, "aoti_outputs.pt"), os.path.join(tmp, "aoti.json")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti", "--save-outputs", saved_aoti, "--json", report])
        expect(rc == 0 and "compiled = aoti (cpu)" in out, "--compiled aoti agrees", f"{rc}\n{out}\n{err}")
        compiled, _, _ = torch.load(saved_aoti, weights_only=True)
        expect(torch.equal(compiled[0], expected), "--compiled aoti's outputs are the package's bit for bit")
        with open(report) as f:
            k = json.load(f)["kernels"]
        expect(k["available"] and len(k["kernels"]) == 3 and k["first_failing"] is None and k["judged"] == 3,
               "--compiled aoti's kernel table: 3 calls, 3 buffers judged, none failing", json.dumps(k)[:2000])

        # 5. inside a package with a planted lowering bug
        buggy = os.path.join(tmp, "relu_bug.pt2")
        planted_package(graph, buggy)
        report = os.path.join(tmp, "bug.json")
        repro = os.path.join(tmp, "repro")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + buggy, "--json", report, "--repro", repro],
                           {**PLANT, "PT2DIFF_WORKER": BUG_WORKER})
        print(out)
        with open(report) as f:
            r = json.load(f)
        k = r["kernels"]
        first = k["kernels"][k["first_failing"]]["name"] if k.get("first_failing") is not None else None
        culprit = (r.get("localization") or {}).get("culprit") or {}
        whats = [c["what"] for c in r["compiles"]]
        expect(rc == 1 and first == "cpp_fused_relu_0" and (k.get("inside") or {}).get("op") == "relu"
               and culprit.get("nodes") == ["relu"] and whats.count("instrumented") == 1
               and "whose outputs fail too (linear_1)" in out,
               "a planted package, its compiler as twin: kernel cpp_fused_relu_0, op relu, localized to relu, one instrumented compile",
               f"{rc}\n{out}\n{err}")
        # --repro: the failing kernel's C++ as AOTI generated it (kept at codegen: the package holds only its .so)
        code_file = os.path.join(repro, "cpp_fused_relu_0.cpp")
        code = open(code_file).read() if os.path.exists(code_file) else ""
        expect((k.get("inside") or {}).get("code_file") == code_file and "cpp_fused_relu_0" in code and "1.01" in code,
               "--repro keeps the failing AOTI kernel's C++, the planted 1.01 in it", code[:3000] or json.dumps(k.get("inside")))
        # ... and the window's repro command compiles it with AOTI (the package is the whole graph's); run here
        # without the exploded compile and localization (one AOTI compile of the window is the check)
        command = ((r.get("localization") or {}).get("repro") or {}).get("command", "")
        expect(command.endswith("--compiled aoti") or "--compiled aoti " in command,
               "the repro's command compiles the window with AOTInductor, not the whole graph's package", command)
        rc2, out2, err2 = run([pt2diff] + shlex.split(command)[1:] + ["--no-exploded", "--no-localize"], {**PLANT, "PT2DIFF_WORKER": BUG_WORKER})
        expect(rc2 == 1, "that command, with the same compiler, reproduces the failure (exit 1)", f"{rc2}\n{out2}\n{err2}")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + buggy])
        lines = [l for l in out.splitlines() if "was not built by this torch and Inductor config from this archive" in l]
        expect(rc == 1 and len(lines) == 1 and "\nlocalization" not in out,
               "the same package, the stock compiler as twin: one line, no localization", f"{rc}\n{out}\n{err}")
    print("aoti package through pt2diff: bit-identical to Python's run; every check one line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
