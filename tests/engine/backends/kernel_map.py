#!/usr/bin/env python3
"""The kernel table with the real Inductor (a ctest, label inductor; about 3 min on 2 cores).

    kernel_map.py PT2DIFF FIXTURES_DIR

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
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
BUG_WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
sys.path.insert(0, os.path.join(ROOT, "tests"))
from report_checks import Checks  # noqa: E402


DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")
KERNEL_PREFIX = "triton_" if DEVICE == "cuda" else "cpp_"


def run(pt2diff, fixtures, name, tmp, *flags, env=None):
    flags = (*flags, "--device", DEVICE)
    base = name[:-5] if name.endswith("_core") else name
    report = os.path.join(tmp, name + ".json")
    if os.path.exists(report):
        os.remove(report)
    p = subprocess.run([pt2diff, os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, base + "_inputs.pt"),
                        "--json", report, *flags], capture_output=True, text=True, env={**os.environ, **(env or {})})
    r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
    return p, r


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect, failures = checks.expect, checks.failures
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("mlp", "ln_softmax_gelu_core", "attention_core", "conv_bn_relu_core"):
            p, r = run(pt2diff, fixtures, name, tmp, "--no-exploded", "--no-localize")
            if r is None:
                expect(False, f"{name}: pt2diff exited {p.returncode}: {p.stderr.strip()[-300:]}")
                continue
            k = r["kernels"]
            expect(k["available"] and k["judged"] >= 1 and k["first_failing"] is None and r["verdict"] == "agree",
                   f"{name}: {len(k['kernels'])} kernel calls, {k['observed']} buffers observed, {k['judged']} judged, "
                   f"none failing ({k['unavailable'] or 'available'}; verdict {r['verdict']})")
            checks.validate(r)

        bug = f"external:{sys.executable} {BUG_WORKER}"
        # (fixture, planted op, a node of the failing kernel, the op the search inside it names)
        for name, op, node, inner in (("mlp", "relu", "relu", "relu"), ("ln_softmax_gelu_core", "div.Tensor", "_softmax", "div")):
            repro = os.path.join(tmp, "repro_" + name)
            p, r = run(pt2diff, fixtures, name, tmp, "--compiled", bug, "--repro", repro, env={"PT2DIFF_PLANT_OP": op})
            if r is None:
                expect(False, f"{name} with a bug in the {op} lowering: pt2diff exited {p.returncode}: {p.stderr.strip()[-300:]}")
                continue
            k = r["kernels"]
            first = k["kernels"][k["first_failing"]] if k["first_failing"] is not None else None
            graph_compiles = [c for c in r["compiles"] if c["what"] == "graph"]
            expect(r["verdict"] == "diverged" and first is not None and node in first["nodes"] and len(graph_compiles) == 1
                   and first["name"].startswith(KERNEL_PREFIX),
                   f"{name} with a bug in the {op} lowering: the first failing kernel is "
                   f"{first and first['name']} (nodes {first and first['nodes']}), from the verdict's one compile")
            checks.validate(r)
            inside = k.get("inside") or {}
            expect(inside.get("kind") == "single_op" and inside.get("op") == inner and inside.get("kernel") == (first or {}).get("name")
                   and 1 <= inside.get("compiles", 99) <= inside.get("bound", 0) and inside.get("bound") == 1 + math.ceil(math.log2(len(inside["nodes"]))),
                   f"{name}: inside {inside.get('kernel')}: {inside.get('summary')} ({inside.get('compiles')} compiles, bound {inside.get('bound')})")
            code_file = inside.get("code_file") or ""
            expect(inside.get("code") and os.path.isfile(code_file) and open(code_file).read() == inside["code"]
                   and os.path.dirname(code_file) == repro and ("def triton_" in inside["code"] if DEVICE == "cuda" else "extern \"C\"" in inside["code"]),
                   f"{name}: the kernel's generated code saved beside the repro: {code_file} ({len(inside.get('code') or '')} chars)")
            culprit = (r.get("localization") or {}).get("culprit") or {}
            if op == "relu":
                expect(k["first_failing_node"] == "relu" and culprit.get("nodes") == ["relu"],
                       f"{name}: its failing buffer is relu's, and localization ({(r.get('localization') or {}).get('compiles')} "
                       f"compiles) names {culprit.get('nodes')}")
            print("\n".join(line for line in p.stdout.splitlines() if "kernel" in line or "generated code" in line))

        # NaN origin: made by the compiled relu (its lowering returns log(-relu(x))), or already in an input.
        p, r = run(pt2diff, fixtures, "mlp", tmp, "--compiled", bug, "--no-localize",
                   env={"PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_ERROR": "nan"})
        origin = (r or {}).get("kernels", {}).get("nonfinite_origin") or {}
        expect(origin.get("kind") == "compiler" and origin.get("node") == "relu" and (origin.get("kernel") or "").startswith(KERNEL_PREFIX)
               and "relu" in origin.get("kernel"),
               f"a NaN made by the compiled relu: {origin or p.stderr.strip()[-300:]}")
        import torch
        (x,) = torch.load(os.path.join(fixtures, "mlp_inputs.pt"), weights_only=True)
        x = x.clone()
        x[0, 0] = float("nan")
        torch.save((x,), os.path.join(tmp, "nan_inputs.pt"))
        report = os.path.join(tmp, "nan.json")
        p = subprocess.run([pt2diff, os.path.join(fixtures, "mlp.pt2"), os.path.join(tmp, "nan_inputs.pt"), "--json", report,
                            "--no-exploded", "--no-localize", "--device", DEVICE], capture_output=True, text=True)
        origin = json.load(open(report))["kernels"].get("nonfinite_origin") or {} if os.path.exists(report) else {}
        expect(origin.get("kind") == "input" and origin.get("node") == "x",
               f"a NaN in the input: {origin or p.stderr.strip()[-300:]}")

        if DEVICE != "cpu":
            return finish(failures)
        p, r = run(pt2diff, fixtures, "mlp", tmp, "--no-kernel-map", "--no-exploded", "--no-localize")
        expect(r is not None and not r["kernels"]["asked"] and "kernels" not in p.stdout.split("outputs")[1].split("per node")[0],
               "--no-kernel-map: not asked, no table in the text report")
        for label, spec, words in (
                ("fault backend", "fault:relu:noise=0.01", "does not observe"),
                ("external worker without the map", f"external:{sys.executable} {os.path.join(ROOT, 'python', 'examples', 'eager_worker.py')}",
                 "does not offer it")):
            p, r = run(pt2diff, fixtures, "mlp", tmp, "--compiled", spec, "--no-exploded", "--no-localize")
            line = next((l for l in p.stdout.splitlines() if l.startswith("kernels: no kernel map")), "")
            expect(r is not None and r["kernels"]["asked"] and not r["kernels"]["available"] and words in r["kernels"]["unavailable"]
                   and words in line, f"{label}: {line or p.stderr.strip()[-300:]}")
    return finish(failures)


def finish(failures):
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("the kernel table names the compiled kernels and the first failing one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
