#!/usr/bin/env python3
"""Calibration of the node verdict (docs/verdicts.md, "Node evidence"): the distribution of every node's
compiled/eager local error ratio over clean compiles, and the same figures for planted single-op bugs.

    python bench/node_calibration.py PT2DIFF [--device cpu|cuda] [-j N] [--out FILE.json] [--planted] [--only NAME ...]
    python bench/node_calibration.py - --table ROWS.json [ROWS.json ...]   the table of saved rows (CPU and CUDA in one)

Clean: every fixture (fixtures/*.pt2 and fixtures/zoo/*.pt2 with their inputs) through the real Inductor
with the exploded compile (`pt2diff G I --no-localize --no-kernel-map --json`). For every floating value
with a compiled local error it records (random ops and aten.empty* left out, as the node verdict leaves them)

    ratio     = RMSE(compiled local, fp64) / max(RMSE(eager local, fp64), u x RMS(fp64))   (error_ratio())
    roundoffs = RMSE(compiled local, fp64) / (u x RMS(fp64))

(u: the unit roundoff of the node's working dtype) by device, dtype of the value and op class, and prints the
table: values, median, 99th percentile and maximum ratio, and the node with the maximum.

--planted: the planted bugs of PLANTED below (a post-grad pass that scales one op's result by 1 + e, and the
same in a lowering), each on its model: whether same() passes the outputs, the outputs' error ratio, the planted
nodes' ratios, the largest ratio of any other node of that run, and what pt2diff's node verdict says.
Prints a markdown table of each; --out writes every row as JSON.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
ZOO_WORKER = os.path.join(ROOT, "tests", "zoo", "planted_worker.py")
LOWERING_WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")

MATMUL = ("aten.linear", "aten.mm", "aten.addmm", "aten.bmm", "aten.matmul", "aten.baddbmm", "aten._scaled_dot_product",
          "aten.scaled_dot_product")
CONV = ("aten.conv", "aten.convolution", "aten._convolution")
REDUCTION = ("aten.sum", "aten.mean", "aten.var", "aten.std", "aten._softmax", "aten.softmax", "aten._log_softmax",
             "aten.log_softmax", "aten.layer_norm", "aten.native_layer_norm", "aten.batch_norm", "aten._native_batch_norm",
             "aten.native_batch_norm", "aten.rms_norm", "aten.norm", "aten.linalg", "aten.amax", "aten.amin", "aten.max",
             "aten.min", "aten.logsumexp", "aten.cumsum", "aten.prod", "aten.avg_pool", "aten.adaptive_avg_pool",
             "aten.max_pool", "aten.lstm", "aten.group_norm", "aten.native_group_norm")

# The planted bugs: (name, model archive, env of the worker, worker, the nodes planted (in pt2diff's names) as a
# predicate over (op, dtype, shape) of a node's value, device). "scale" plants go through a post-grad pass
# (tests/zoo/planted_worker.py), "lowering" ones through Inductor's lowering (planted_lowering.py).
PLANTED = [
    ("llama_bf16 down_proj x1.05 (post-grad)", "zoo/llama_bf16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "matmul",
     "PT2DIFF_PLANT_DTYPE": "bfloat16", "PT2DIFF_PLANT_ERROR": "0.05", "PT2DIFF_PLANT_INPUT_SHAPE": "16,128"}, ZOO_WORKER),
    ("llama_bf16 down_proj x1.03 (post-grad)", "zoo/llama_bf16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "matmul",
     "PT2DIFF_PLANT_DTYPE": "bfloat16", "PT2DIFF_PLANT_ERROR": "0.03", "PT2DIFF_PLANT_INPUT_SHAPE": "16,128"}, ZOO_WORKER),
    ("llama_bf16 down_proj x1.02 (post-grad)", "zoo/llama_bf16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "matmul",
     "PT2DIFF_PLANT_DTYPE": "bfloat16", "PT2DIFF_PLANT_ERROR": "0.02", "PT2DIFF_PLANT_INPUT_SHAPE": "16,128"}, ZOO_WORKER),
    ("llama_bf16 mm x1.03 at [16, 64] (lowering)", "zoo/llama_bf16", {"PT2DIFF_PLANT_OP": "mm", "PT2DIFF_PLANT_ERROR": "0.03",
     "PT2DIFF_PLANT_SHAPE": "16,64"}, LOWERING_WORKER),
    ("resnet18_fp16 conv x1.02 (post-grad)", "zoo/resnet18_fp16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "conv",
     "PT2DIFF_PLANT_DTYPE": "float16", "PT2DIFF_PLANT_ERROR": "0.02", "PT2DIFF_PLANT_INPUT_SHAPE": "2,4,8,8"}, ZOO_WORKER),
    ("resnet18_fp16 conv x1.004 (post-grad)", "zoo/resnet18_fp16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "conv",
     "PT2DIFF_PLANT_DTYPE": "float16", "PT2DIFF_PLANT_ERROR": "0.004", "PT2DIFF_PLANT_INPUT_SHAPE": "2,4,8,8"}, ZOO_WORKER),
    ("resnet18_fp16 convolution x1.004 at [2, 8, 4, 4] (lowering)", "zoo/resnet18_fp16", {"PT2DIFF_PLANT_OP": "convolution",
     "PT2DIFF_PLANT_ERROR": "0.004", "PT2DIFF_PLANT_SHAPE": "2,8,4,4"}, LOWERING_WORKER),
    ("conv_bf16 conv x1.03 (post-grad)", "zoo/conv_bf16", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "conv",
     "PT2DIFF_PLANT_DTYPE": "bfloat16", "PT2DIFF_PLANT_ERROR": "0.03", "PT2DIFF_PLANT_INPUT_SHAPE": "2,16,16,16"}, ZOO_WORKER),
    ("gpt2 fp32 addmm x(1+3e-4) (post-grad)", "zoo/gpt2", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "matmul",
     "PT2DIFF_PLANT_DTYPE": "float32", "PT2DIFF_PLANT_ERROR": "3e-4", "PT2DIFF_PLANT_INPUT_SHAPE": "16,128"}, ZOO_WORKER),
    ("resnet18 fp32 conv x(1+1e-4) (post-grad)", "zoo/resnet18", {"PT2DIFF_PLANT": "scale", "PT2DIFF_PLANT_OPS": "conv",
     "PT2DIFF_PLANT_DTYPE": "float32", "PT2DIFF_PLANT_ERROR": "1e-4", "PT2DIFF_PLANT_INPUT_SHAPE": "2,8,4,4"}, ZOO_WORKER),
]


def op_class(op):
    if op.startswith(MATMUL):
        return "matmul/attention"
    if op.startswith(CONV):
        return "convolution"
    if op.startswith(REDUCTION):
        return "reduction/norm"
    return "elementwise/other"


def value_ratio(v):
    """(ratio, roundoffs) of a value's compiled local error, as judge_nodes computes them; None when not judged."""
    loc, comp = v.get("local"), v.get("compiled_local")
    if not loc or not comp or loc["exact_kind"] or not isinstance(loc["rmse"], (int, float)):
        return None
    if loc.get("nan") or loc.get("inf"):
        return None
    scale = loc["unit_roundoff"] * (loc["ref_rms"] if isinstance(loc["ref_rms"], (int, float)) else 0)
    rmse = comp["rmse"] if isinstance(comp["rmse"], (int, float)) else float("inf")
    floor = max(loc["rmse"], scale)
    ratio = rmse / floor if floor > 0 else (1.0 if rmse == 0 else float("inf"))
    return ratio, (rmse / scale if scale > 0 else float("inf"))


def cases(only):
    out = []
    for graph in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*.pt2")) + glob.glob(os.path.join(ROOT, "fixtures", "zoo", "*.pt2"))):
        name = os.path.relpath(graph, os.path.join(ROOT, "fixtures"))[:-4]
        stem = name[:-5] if name.endswith("_core") else name
        inputs = os.path.join(ROOT, "fixtures", stem + "_inputs.pt")
        if not os.path.exists(inputs) or (only and not any(o in name for o in only)):
            continue
        out.append((name, graph, inputs))
    return out


def run(pt2diff, graph, inputs, device, extra=(), env=None):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        start = time.monotonic()
        p = subprocess.run([pt2diff, graph, inputs, "--device", device, "--json", report, *extra], capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})))
        seconds = time.monotonic() - start
        if p.returncode not in (0, 1) or not os.path.exists(report):
            return None, f"exit {p.returncode}: {(p.stderr or p.stdout).strip().splitlines()[-1:] }", seconds
        return json.load(open(report)), None, seconds


def clean(pt2diff, device, jobs, only):
    rows = []

    def one(case):
        name, graph, inputs = case
        r, err, seconds = run(pt2diff, graph, inputs, device, ["--no-localize", "--no-kernel-map"])
        return name, r, err, seconds

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, r, err, seconds in pool.map(one, cases(only)):
            if r is None:
                print(f"  {name}: skipped ({err})", file=sys.stderr, flush=True)
                continue
            nv = r.get("node_verdict", {})
            print(f"  {name}: {r['verdict']}, level {r['level']}, node verdict {nv.get('level')} (worst {nv.get('worst_node')} "
                  f"{nv.get('worst_ratio')}), {seconds:.0f} s", file=sys.stderr, flush=True)
            skip = set(r.get("random_nodes") or [])  # as judge_nodes: random draws and uninitialized memory are not judged
            for n in r["nodes"]:
                if n["name"] in skip or n["op"].startswith(("aten.empty", "aten.new_empty")):
                    continue
                for v in n["values"]:
                    got = value_ratio(v)
                    if got is None:
                        continue
                    rows.append({"case": name, "device": device, "node": n["name"], "op": n["op"], "class": op_class(n["op"]),
                                 "dtype": v["dtype"], "numel": v["local"]["numel"], "ratio": got[0], "roundoffs": got[1],
                                 "level": r["level"]})
    return rows


def table(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row["device"], row["dtype"], row["class"]), []).append(row)
    lines = ["| device | dtype | op class | values | median ratio | p99 ratio | max ratio | at | max roundoffs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(groups):
        g = sorted(groups[key], key=lambda r: r["ratio"])
        ratios = [r["ratio"] for r in g]
        p99 = ratios[min(len(ratios) - 1, int(0.99 * len(ratios)))]
        worst = g[-1]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(g)} | {statistics.median(ratios):.3g} | {p99:.3g} | {worst['ratio']:.3g} | "
                     f"{worst['case']}:{worst['node']} ({worst['op']}) | {max([r['roundoffs'] for r in g if r['roundoffs'] != float('inf')] or [0]):.3g} |")
    return "\n".join(lines)


def planted(pt2diff, device, jobs):
    rows = []

    def one(plant):
        name, model, env, worker = plant
        graph = os.path.join(ROOT, "fixtures", model + ".pt2")
        inputs = os.path.join(ROOT, "fixtures", model.replace("_core", "") + "_inputs.pt")
        r, err, seconds = run(pt2diff, graph, inputs, device, ["--compiled", f"external:{PY} {worker}", "--no-kernel-map"],
                              dict(env, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1"))
        return name, r, err, seconds

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, r, err, seconds in pool.map(one, PLANTED):
            if r is None:
                print(f"  {name}: failed ({err})", file=sys.stderr, flush=True)
                continue
            nv = r["node_verdict"]
            flagged = [f["node"] for f in nv["findings"]] + [a["node"] for f in nv["findings"] for a in f["also"]]
            ratios = {n["name"]: max([value_ratio(v)[0] for v in n["values"] if value_ratio(v)] or [0]) for n in r["nodes"]}
            others = max([x for n, x in ratios.items() if n not in flagged] or [0])
            out_ratio = max([o["error_ratio"] for o in r["outputs"] if isinstance(o["error_ratio"], (int, float))] or [0])
            conf = (nv.get("confirmation") or {})
            row = {"plant": name, "device": device, "verdict": r["verdict"], "level": r["level"], "output_ratio": out_ratio,
                   "findings": [(f["node"], f["ratio"], [a["node"] for a in f["also"]]) for f in nv["findings"]],
                   "flagged": flagged, "planted_ratios": [ratios[n] for n in flagged], "max_other_ratio": others,
                   "culprit": ((r.get("localization") or {}).get("culprit") or {}).get("nodes"),
                   "confirmation": conf.get("conclusion"), "confirm_before": conf.get("before"), "confirm_after": conf.get("after"),
                   "compiles": len(r["compiles"]) + (conf.get("compiles") or 0), "seconds": round(seconds, 1)}
            print(f"  {name}: {row}", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def planted_table(rows):
    lines = ["| planted bug | device | same() at the outputs | output error ratio | run level | planted nodes flagged (ratio) | "
             "largest other node | confirmation (outputs' ratio before -> after) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        nodes = ", ".join(f"{n} ({x:.3g}x)" for n, x in zip(r["flagged"], r["planted_ratios"])) or "none"
        conf = f"{r['confirmation']} ({r['confirm_before']:.3g}x -> {r['confirm_after']:.3g}x)" if r["confirmation"] else "-"
        lines.append(f"| {r['plant']} | {r['device']} | {'passes' if r['verdict'] == 'agree' else r['verdict']} | {r['output_ratio']:.3g} | "
                     f"{r['level']} | {nodes} | {r['max_other_ratio']:.3g} | {conf} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--planted", action="store_true", help="the planted bugs instead of the clean runs")
    ap.add_argument("--only", nargs="*", default=[], help="only cases whose name contains one of these")
    ap.add_argument("--table", nargs="+", metavar="ROWS.json", help="print the table of rows saved by --out (several: one table)")
    a = ap.parse_args()
    if a.table:
        rows = [row for f in a.table for row in json.load(open(f))]
        print(planted_table(rows) if rows and "plant" in rows[0] else table(rows))
        return
    if a.planted:
        rows = planted(a.pt2diff, a.device, a.jobs)
        print(planted_table(rows))
    else:
        rows = clean(a.pt2diff, a.device, a.jobs, a.only)
        print(table(rows))
    if a.out:
        json.dump(rows, open(a.out, "w"), indent=0)


if __name__ == "__main__":
    main()
