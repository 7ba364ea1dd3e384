#!/usr/bin/env python3
"""Concurrent writers to one Inductor cache: do parallel cases ever get another case's compiled code?
(docs/batch.md, "Measured").

    python bench/concurrent_cache.py PT2DIFF [--jobs N]

A corpus of 16 cases through the real Inductor: 12 clean fixtures (both forms of six; FX graph, AOTAutograd
and kernel caches on) and 4 with a bug planted in Inductor's relu lowering (tests/engine/localize/
lowering_bug_worker.py: FX graph cache off, its kernel cache shared by the four). Three batches:
  serial       --jobs 1 over a cold cache of its own;
  cold         --jobs N (default: the CPUs) over a second cold cache, shared by all its cases;
  warm         the same again over that now warm cache.
Every case's row (verdict, levels, every output's errors to fp64 and eager, culprit, hints) must be equal in
the three but for timings (pt2diff_batch.summary.comparable): a kernel or graph handed to the wrong case, or
half written, would change a number, a verdict or a culprit. Prints the wall times and the cases.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from pt2diff_batch.summary import comparable  # noqa: E402

FIXTURES = os.path.join(ROOT, "fixtures")
CLEAN = ["mlp", "attention", "conv_bn_relu", "ln_softmax_gelu", "bf16_block", "dynamic_batch"]
PLANTED = ["mlp", "mlp_core", "conv_bn_relu", "conv_bn_relu_core"]
WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")


def corpus(folder, cache):
    lines = []
    for name in CLEAN:
        for graph in (name, name + "_core"):
            lines.append(f"{FIXTURES}/{graph}.pt2\t{FIXTURES}/{name}_inputs.pt\t--inductor-cache {cache}")
    for graph in PLANTED:
        base = graph[:-5] if graph.endswith("_core") else graph
        lines.append(f"{FIXTURES}/{graph}.pt2\t{FIXTURES}/{base}_inputs.pt\t--compiled 'external:{sys.executable} {WORKER}'")
    path = os.path.join(folder, f"corpus-{os.path.basename(cache)}.tsv")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pt2diff")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("serial", 1, os.path.join(tmp, "cache-serial")), ("cold", a.jobs, os.path.join(tmp, "cache-shared")),
                ("warm", a.jobs, os.path.join(tmp, "cache-shared"))]
        docs, walls = {}, {}
        for label, jobs, cache in runs:
            manifest = corpus(tmp, cache)
            out = os.path.join(tmp, label)
            start = time.monotonic()
            run = subprocess.run([a.pt2diff, "batch", manifest, "--out", out, "--jobs", str(jobs)], capture_output=True, text=True)
            walls[label] = time.monotonic() - start
            with open(os.path.join(out, "summary.json")) as f:
                docs[label] = json.load(f)
            print(f"{label}: --jobs {jobs}, exit {run.returncode}, {len(docs[label]['cases'])} cases in {walls[label]:.1f} s", flush=True)
        # The serial batch names another cache directory in its cases' options (and so in their keys and folders).
        where = ("options", "key", "case", "case_dir", "report_json", "report_html", "duplicate_of")
        rows = {label: [{k: v for k, v in r.items() if k not in where} for r in comparable(doc)["cases"]]
                for label, doc in docs.items()}
        options = [" ".join(r["options"]) for r in docs["serial"]["cases"]]
        for i, r in enumerate(rows["serial"]):
            same = all(rows[label][i] == r for label in rows)
            print(f"  {os.path.basename(r['graph'])} {'planted' if 'external' in options[i] else 'clean'}: "
                  f"{r['verdict']}, culprit {r.get('culprit_op')} {'same in all three' if same else 'DIFFERS'}")
        equal = all(rows[label] == rows["serial"] for label in rows)
        print(f"rows equal but for timings in the three batches: {equal}; wall " + ", ".join(f"{k} {v:.1f} s" for k, v in walls.items()))
        return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
