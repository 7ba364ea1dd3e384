#!/usr/bin/env python3
"""Time to culprit before and after the kernel table, on planted lowering bugs (docs/performance.md,
"The op inside the kernel"), run by hand:

    python bench/kernel_search.py build/pt2diff bench/results/kernel_search.json [NOTE]
    python bench/run.py --render-only      # the table in docs/performance.md

Each case plants a bug in one ATen op's Inductor lowering (tests/engine/localize/lowering_bug_worker.py,
its result scaled by 1.01 inside the generated kernel) and runs the default job on a fixture with
Inductor's caches off (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1: every compile is a real one). From the one report:
- before: localization's bisection (docs/usage.md): its compiles and seconds, the culprit it names;
- after: the kernel table's first failing kernel (no compile of its own) and the search inside it
  (kernels.inside): its compiles, seconds and the op it names.
Prints a markdown table and the median and worst of each; NOTE (what else ran on the machine) goes in
the caption."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
#: (fixture, inputs, the op whose lowering is wrong). Not mul.Tensor (the planted error is a multiply: it
#: would recurse) nor ops Inductor decomposes before lowering (gelu becomes erf, _softmax exp and div).
CASES = [
    ("mlp", "mlp", "relu"),
    ("conv_bn_relu_core", "conv_bn_relu", "relu"),
    ("ln_softmax_gelu_core", "ln_softmax_gelu", "div.Tensor"),
    ("ln_softmax_gelu_core", "ln_softmax_gelu", "exp"),
    ("ln_softmax_gelu_core", "ln_softmax_gelu", "erf"),
    ("attention_core", "attention", "exp"),
    ("bf16_block_core", "bf16_block", "tanh"),
    ("mixed_precision_core", "mixed_precision", "add.Tensor"),
    ("multi_output_core", "multi_output", "sub.Tensor"),
]


def main():
    cli, out = sys.argv[1], sys.argv[2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fixture, inputs, op in CASES:
            report = os.path.join(tmp, "r.json")
            start = time.perf_counter()
            p = subprocess.run([cli, f"{ROOT}/fixtures/{fixture}.pt2", f"{ROOT}/fixtures/{inputs}_inputs.pt", "--json", report,
                                "--compiled", f"external:{sys.executable} {WORKER}"], capture_output=True, text=True,
                               env={**os.environ, "PT2DIFF_PLANT_OP": op, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
            wall = time.perf_counter() - start
            row = {"fixture": fixture, "planted": op, "exit": p.returncode, "wall": round(wall, 2)}
            if p.returncode in (0, 1) and os.path.exists(report):
                r = json.load(open(report))
                loc = r.get("localization") or {}
                k = r["kernels"]
                first = k["kernels"][k["first_failing"]] if k.get("first_failing") is not None else None
                inside = k.get("inside") or {}
                row.update({"verdict": r["verdict"], "seconds": r["seconds"],
                            "before": {"compiles": loc.get("compiles"), "seconds": loc.get("seconds"),
                                       "kind": (loc.get("culprit") or {}).get("kind"), "culprit": (loc.get("culprit") or {}).get("nodes")},
                            "table": {"kernel": first and first["name"], "nodes": first and first["nodes"],
                                      "node": k.get("first_failing_node")},
                            "inside": {k2: inside.get(k2) for k2 in ("kind", "op", "fused_with", "compiles", "bound", "seconds")}})
            else:
                row["error"] = p.stderr.strip()[-300:]
            rows.append(row)
            print(json.dumps(row), flush=True)
            save(out, rows, sys.argv[3] if len(sys.argv) > 3 else "")
    print("| planted bug | fixture | bisection: compiles, s, culprit | kernel table (0 compiles): first failing kernel | inside it: compiles (bound), s, op |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "error" in r or r.get("verdict") != "diverged":
            print(f"| `{r['planted']}` | {r['fixture']} | exit {r['exit']} {r.get('verdict', '')} | | |")
            continue
        b, t, i = r["before"], r["table"], r["inside"]
        print(f"| `{r['planted']}` | {r['fixture']} | {b['compiles']}, {b['seconds']:.1f} s, {b['kind']} {', '.join(b['culprit'] or [])} | "
              f"`{t['kernel']}` ({', '.join(t['nodes'] or [])}) | {i['compiles']} ({i['bound']}), {i['seconds'] or 0:.1f} s, {i['kind']} {i['op']} |")
    done = [r for r in rows if r.get("verdict") == "diverged" and r["inside"]["compiles"] is not None]
    for label, key, part in (("bisection", "before", "compiles"), ("inside the kernel", "inside", "compiles"),
                             ("bisection", "before", "seconds"), ("inside the kernel", "inside", "seconds")):
        vals = [r[key][part] for r in done if r[key][part] is not None]
        if vals:
            print(f"{label} {part}: median {statistics.median(vals):.2f}, worst {max(vals):.2f} ({len(vals)} cases)")


def save(out, rows, note):
    """In bench/run.py's results format (rendered by its ren_kernel_search)."""
    sys.path.insert(0, HERE)
    from minifier_bench import machine  # noqa: E402 - the same machine line as the minifier's figures
    import torch
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    res = {"section": "kernel_search", "date": time.strftime("%Y-%m-%d"), "commit": (rev or "unknown") + ("-dirty" if dirty else ""),
           "runner": "bench/kernel_search.py", "machine": machine(), "torch": torch.__version__,
           "commands": [{"argv": ["python", "bench/kernel_search.py", "build/pt2diff", "OUT.json"], "note": note}],
           "data": {"rows": rows}}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
