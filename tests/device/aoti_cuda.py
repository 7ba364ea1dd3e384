#!/usr/bin/env python3
"""On a CUDA machine: AOTInductor packages built for cuda, run by pt2diff on the GPU (docs/usage.md, "AOTInductor").

    python tests/device/aoti_cuda.py BUILD/pt2diff [CHECKS]      (CHECKS: e.g. 1,3; default all)

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
Prints one line per check and, last, "aoti on cuda: ok" (exit 0) or "aoti on cuda: FAILED" (exit 1), with the
compile times (package, instrumented AOTI compile of the archive, the JIT compile of the same graph).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from models_cuda import TinyDecoder, seeded_decoder  # noqa: E402

BUG_WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
PLANT = {"PT2DIFF_PLANT_OP": "rsqrt", "PT2DIFF_PLANT_ERROR": "0.05"}
failures = 0


def check(ok, what, detail=""):
    global failures
    failures += not ok
    print(f"{what}: {'ok' if ok else 'WRONG'}", flush=True)
    if not ok and detail:
        print(detail[-6000:], flush=True)


def run(cmd, env=None):
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout, r.stderr, time.time() - start


def package(archive, path, planted=False):
    """Starts building an AOTI package of `archive` in a fresh Python (planted: with the lowering bug); returns
    the process and its start time (finish() waits). The builds run side by side: a GPU machine has the cores."""
    code = ("import sys, torch, torch._inductor.config as c\n"
            + ("sys.path.insert(0, sys.argv[3]); import planted_lowering; planted_lowering.plant()\n" if planted else "")
            + "with c.patch({'force_disable_caches': True}):\n"
              "    torch._inductor.aoti_compile_and_package(torch.export.load(sys.argv[1]), package_path=sys.argv[2])\n")
    proc = subprocess.Popen([sys.executable, "-c", code, archive, path, os.path.join(ROOT, "tests", "engine", "localize")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(PLANT if planted else {})})
    return proc, time.time()


def finish(build, what):
    """Waits for a package build from package(); its wall time, or exits naming the build that failed."""
    proc, start = build
    _, err = proc.communicate()
    if proc.returncode != 0:
        print(err[-4000:])
        raise SystemExit(f"building the {what} package failed")
    return time.time() - start


def report(path):
    with open(path) as f:
        return json.load(f)


def main():
    cli = sys.argv[1]
    only = {int(n) for n in sys.argv[2].split(",")} if len(sys.argv) > 2 else {1, 2, 3, 4, 5}
    want = only.__contains__
    assert torch.cuda.is_available(), "needs a CUDA device"
    model, ids = seeded_decoder()
    tmp = tempfile.mkdtemp(prefix="aoti-cuda-")
    archive, inputs = os.path.join(tmp, "decoder.pt2"), os.path.join(tmp, "decoder_inputs.pt")
    torch.export.save(torch.export.export(model, (ids,)), archive)
    torch.save((ids,), inputs)
    clean, buggy = os.path.join(tmp, "clean.pt2"), os.path.join(tmp, "rsqrt_bug.pt2")
    cpu_archive, cpu_inputs, cpu_pkg = (os.path.join(tmp, n) for n in ("cpu.pt2", "cpu_inputs.pt", "cpu_pkg.pt2"))
    cpu_model = TinyDecoder().to(torch.bfloat16).eval()
    torch.export.save(torch.export.export(cpu_model, (ids.cpu(),)), cpu_archive)
    torch.save((ids.cpu(),), cpu_inputs)
    builds = {}
    if want(1) or want(5):
        builds["clean cuda"] = package(archive, clean)
    if want(3) or want(4):
        builds["planted cuda"] = package(archive, buggy, planted=True)
    if want(5):
        builds["cpu"] = package(cpu_archive, cpu_pkg)
    times = {what: finish(b, what) for what, b in builds.items()}
    print("package builds, side by side (fresh Python each, caches off): "
          + ", ".join(f"{what} {t:.1f} s" for what, t in times.items()))
    env = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}

    if want(1):
        # 1. the clean package agrees on the GPU
        j = os.path.join(tmp, "clean.json")
        rc, out, err, secs = run([cli, archive, inputs, "--device", "cuda", "--compiled", "aoti:" + clean, "--json", j], env)
        r = report(j) if os.path.exists(j) else {}
        check(rc == 0 and "AGREE" in out and r.get("devices", {}).get("native", "").startswith("cuda"),
              f"a clean CUDA package of the bf16 decoder agrees on cuda ({secs:.1f} s)", out + err)

    if want(2):
        # 2. --compiled aoti on cuda: the archive through AOTInductor, instrumented; versus the JIT path
        j = os.path.join(tmp, "aoti.json")
        rc, out, err, secs = run([cli, archive, inputs, "--device", "cuda", "--compiled", "aoti", "--json", j], env)
        r = report(j) if os.path.exists(j) else {}
        k = r.get("kernels", {})
        aoti_graph = next((c for c in r.get("compiles", []) if c["what"] == "graph"), {})
        check(rc == 0 and k.get("available") and k.get("first_failing") is None
              and any(c.get("name", "").startswith("triton") for c in k.get("kernels", [])),
              f"--compiled aoti on cuda agrees, kernel table of {len(k.get('kernels', []))} calls ({secs:.1f} s)", out + err)
        j2 = os.path.join(tmp, "jit.json")
        rc2, out2, err2, secs2 = run([cli, archive, inputs, "--device", "cuda", "--json", j2], env)
        jit_graph = next((c for c in (report(j2) if os.path.exists(j2) else {}).get("compiles", []) if c["what"] == "graph"), {})
        print(f"whole-graph compile with the kernel map, caches off: AOTI {aoti_graph.get('compile_seconds', 0):.1f} s, "
              f"JIT {jit_graph.get('compile_seconds', 0):.1f} s; runs {secs:.1f} s and {secs2:.1f} s (rc {rc2})")

    if want(3):
        # 3. the planted package, with the same compiler as twin: kernel, op, localization
        j = os.path.join(tmp, "bug.json")
        repro = os.path.join(tmp, "repro")
        rc, out, err, secs = run([cli, archive, inputs, "--device", "cuda", "--compiled", "aoti:" + buggy, "--json", j,
                                  "--repro", repro], {**env, **PLANT, "PT2DIFF_WORKER": BUG_WORKER})
        r = report(j) if os.path.exists(j) else {}
        k = r.get("kernels", {})
        first = k["kernels"][k["first_failing"]] if k.get("first_failing") is not None else {}
        inside = k.get("inside") or {}
        culprit = (r.get("localization") or {}).get("culprit") or {}
        instrumented = [c for c in r.get("compiles", []) if c["what"] == "instrumented"]
        check(rc == 1 and first.get("name", "").startswith("triton") and "rsqrt" in str(inside.get("op", ""))
              and any(n.startswith("rsqrt") for n in culprit.get("nodes", [])) and len(instrumented) == 1,
              f"a CUDA package with rsqrt's lowering planted: kernel {first.get('name')} (nodes {first.get('nodes')}), "
              f"op {inside.get('op')}, localized to {culprit.get('nodes')}; instrumented compile "
              f"{instrumented[0]['compile_seconds'] if instrumented else -1:.1f} s ({secs:.1f} s)", out + err)
        code_file = inside.get("code_file") or ""
        code = open(code_file).read() if code_file and os.path.exists(code_file) else ""
        check(code_file == os.path.join(repro, f"{first.get('name')}.py") and "@triton" in code and "1.05" in code,
              f"--repro keeps that kernel's Triton source, the planted 1.05 in it ({code_file})", code[:3000])

    if want(4):
        # 4. the planted package with the stock compiler as twin: it does not reproduce, one line says so
        rc, out, err, secs = run([cli, archive, inputs, "--device", "cuda", "--compiled", "aoti:" + buggy], env)
        check(rc == 1 and "was not built by this torch and Inductor config from this archive" in out + err,
              f"the same package, the stock compiler as twin: the not-reproduced line ({secs:.1f} s)", out + err)

    if want(5):
        # 5. AOTI's checklist
        rc, out, err, _ = run([cli, archive, inputs, "--device", "cpu", "--compiled", "aoti:" + clean], env)
        line = [l for l in (out + err).splitlines() if "was compiled for cuda" in l]
        check(rc == 2 and len(line) == 1 and "--device cuda" in line[0], "the cuda package with --device cpu: exit 2, one line",
              out + err)
        rc, out, err, _ = run([cli, cpu_archive, cpu_inputs, "--device", "cuda", "--compiled", "aoti:" + cpu_pkg], env)
        line = [l for l in (out + err).splitlines() if "was compiled for cpu" in l]
        check(rc == 2 and len(line) == 1, "a CPU package with --device cuda: exit 2, one line", out + err)
        strided = os.path.join(tmp, "strided_inputs.pt")
        torch.save((ids.t().contiguous().t(),), strided)
        rc, out, err, _ = run([cli, archive, strided, "--device", "cuda", "--compiled", "aoti:" + clean], env)
        line = [l for l in (out + err).splitlines() if "guards" in l and "'ids'" in l]
        check(rc == 4 and len(line) >= 1, "token ids with other strides: exit 4, the input named", out + err)

    print("aoti on cuda: " + ("ok" if failures == 0 else "FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
