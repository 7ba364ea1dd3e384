#!/usr/bin/env python3
"""What a size sweep costs: one dynamic compile for every size, against compiling each size (docs/performance.md,
docs/dynamic-shapes.md), run by hand on the CPU here and on a GPU machine:

    python bench/sizes_bench.py PT2DIFF [--device cpu|cuda] [--graphs decoder_seq,conv_batch] [--note TEXT]
    python bench/run.py --render-only        (renders bench/results/sizes[_gpu].json into docs/performance.md)

For each graph of fixtures/dynamic, at its default sizes, each with a fresh Inductor cache (seeded with the
precompiled header and the vector-ISA probes only, as a user's process finds them):
- dynamic: `PT2DIFF sizes GRAPH INPUTS --json`: the dynamic compile of the graph and of its exploded ops, once;
- static: the same with `--static`: every size is a new compile of each (Dynamo recompiles at each new size);
- their wall times, the compiles and recompiles each made, and the verdicts (every size should agree).

Writes bench/results/sizes.json (cuda: sizes_gpu.json), bench/run.py's results format.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minifier_bench  # noqa: E402  (its machine(): the results' caption)
from training_bench import seed_cache  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHS = ["decoder_seq", "conv_batch"]


def measure(cli, name, device, tmp):
    row = {"graph": name}
    for mode, flags in (("dynamic", []), ("static", ["--static"])):
        report = os.path.join(tmp, f"{name}-{mode}.json")
        cache = os.path.join(tmp, f"{name}-{mode}-cache")
        seed_cache(cache)
        t0 = time.perf_counter()
        p = subprocess.run([cli, "sizes", os.path.join(ROOT, "fixtures", "dynamic", name + ".pt2"),
                            os.path.join(ROOT, "fixtures", "dynamic", name + "_inputs.pt"), "--device", device,
                            "--inductor-cache", cache, "--json", report, *flags], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        s = json.load(open(report)) if os.path.exists(report) else {}
        points = s.get("points", [])
        row[mode] = {"exit": p.returncode, "wall_s": wall, "sizes": len(points), "compiles": s.get("compiles"),
                     "recompiles": s.get("recompiles"), "agree": sum(1 for q in points if q["level"] == "pass"),
                     "mode": (s.get("shapes") or {}).get("mode"),
                     "first_size_s": max((q["seconds"] for q in points), default=None)}
    print(f"  {name}: {row}", file=sys.stderr, flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff", help="the pt2diff CLI (build/pt2diff)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile, for the caption")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pt2diff-sizes-bench-")
    rows = [measure(a.pt2diff, g, a.device, tmp) for g in a.graphs.split(",")]
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    gpu = a.device.startswith("cuda")
    res = {"section": "sizes_gpu" if gpu else "sizes", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "commit": rev + ("-dirty" if dirty else ""), "runner": "bench/sizes_bench.py",
           "machine": minifier_bench.machine(a.python, a.device), "torch": torch_version,
           "commands": [{"argv": ["python", "bench/sizes_bench.py", "build/pt2diff", "--device", a.device, "--graphs", a.graphs],
                         "note": a.note}],
           "data": {"rows": rows}}
    out = os.path.join(ROOT, "bench", "results", ("sizes_gpu" if gpu else "sizes") + ".json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(out)}; render with: python bench/run.py --render-only", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
