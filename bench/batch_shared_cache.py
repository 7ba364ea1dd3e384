#!/usr/bin/env python3
"""Concurrent writers of one Inductor cache: does a batch ever hand a case another case's code?

    python bench/batch_shared_cache.py build/pt2diff [--jobs N]     (default N: this machine's CPUs)

16 Inductor cases: 8 fixtures, each twice, under option sets that compile the very same graphs (the second
adds --tol 1e-4, which the compiler never sees), so pairs of cases race for the same FX-graph, AOTAutograd
and kernel cache entries. Three batches:
  serial  --jobs 1, its own cache (the reference);
  cold    --jobs N, one shared cache, empty at the start;
  warm    --jobs N, the same cache again: every compile is a hit.
Each case's verdict, level, culprit, outputs (name, pass, reason) and the node findings must equal the
serial run's. Prints the table for docs/performance.md ("One Inductor cache, many writers"); exit 1 on
any difference.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
NAMES = ["mlp", "attention", "bf16_block", "conv_bn_relu", "ln_softmax_gelu", "multi_output", "mixed_precision", "dropout"]
OPTION_SETS = ["--compiled inductor", "--compiled inductor --tol 1e-4"]


def essentials(row):
    """What a cache race could change: everything the diagnosis says, nothing about time or place."""
    outputs = [(o.get("name"), o.get("pass"), o.get("reason")) for o in row.get("outputs") or []]
    return {"verdict": row["verdict"], "level": row.get("level"), "failure": row["failure"], "culprit": row.get("culprit"),
            "culprit_op": row.get("culprit_op"), "outputs": outputs, "node_findings": row.get("node_findings"),
            "hints": row.get("hints"), "compiles": row.get("compiles")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pt2diff")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pt2diff-shared-cache-")
    try:
        def manifest(cache):
            path = os.path.join(tmp, f"cases-{os.path.basename(cache)}.tsv")
            with open(path, "w") as f:
                for options in OPTION_SETS:
                    for name in NAMES:
                        f.write(f"{FIXTURES}/{name}.pt2\t{FIXTURES}/{name}_inputs.pt\t{options} --inductor-cache {cache}\n")
            return path

        def batch(label, cache, jobs):
            out = os.path.join(tmp, label)
            start = time.perf_counter()
            env = {**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0"}
            r = subprocess.run([args.pt2diff, "batch", manifest(cache), "--out", out, "--jobs", str(jobs)], capture_output=True,
                               text=True, env=env)
            wall = time.perf_counter() - start
            if r.returncode not in (0, 1):
                sys.exit(f"{label}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
            with open(os.path.join(out, "summary.json")) as f:
                doc = json.load(f)
            return wall, doc

        shared = os.path.join(tmp, "shared")
        runs = {"serial": batch("serial", os.path.join(tmp, "own"), 1), "cold": batch("cold", shared, args.jobs),
                "warm": batch("warm", shared, args.jobs)}
        # The manifests differ only in the cache path: compare by (graph, options without it).
        def keyed(doc):
            return {(r["graph"], " ".join(o for o in r["options"] if not o.startswith(tmp))): r for r in doc["cases"]}
        reference = keyed(runs["serial"][1])
        differences = 0
        print(f"{len(reference)} Inductor cases (8 fixtures x {len(OPTION_SETS)} option sets compiling the same graphs)")
        print(f"{'batch':8} {'jobs':>4} {'wall s':>8} {'compile s':>10}  verdicts                      same as serial")
        for label, (wall, doc) in runs.items():
            rows = keyed(doc)
            same = sum(essentials(rows[k]) == essentials(reference[k]) for k in reference if k in rows)
            for k in reference:
                if k in rows and essentials(rows[k]) != essentials(reference[k]):
                    differences += 1
                    print(f"  DIFFERS {label} {os.path.basename(k[0])} {k[1]}: {essentials(rows[k])} vs {essentials(reference[k])}")
            counts = doc["counts"]
            verdicts = f"agree {counts['agree']}, diverged {counts['diverged']}, failed {counts['failed']}"
            compile_s = sum(r.get("compile_seconds") or 0 for r in doc["cases"])
            jobs = 1 if label == "serial" else args.jobs
            print(f"{label:8} {jobs:>4} {wall:8.1f} {compile_s:10.1f}  {verdicts:29} {same}/{len(reference)}")
        culprits = sorted({r.get("culprit_op") for r in runs["serial"][1]["cases"] if r.get("culprit_op")})
        print(f"culprits in the reference: {culprits or 'none'}")
        print("identical" if differences == 0 else f"{differences} differences")
        return 1 if differences else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
