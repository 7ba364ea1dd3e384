#!/usr/bin/env python3
"""`pt2diff GRAPH INPUTS` with its compiles overlapped and not (--overlap on / off): wall time of each, and
whether the JSON reports agree but for timings (docs/performance.md, "Compiles beside the runs").

    python3 bench/overlap_bench.py PT2DIFF [--runs N] [--cold] [--device cpu|cuda] GRAPH:INPUTS...

Each graph runs --overlap off, then on, alternately, N times (default 3); the median wall time of each is
printed with their ratio. --cold sets TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 (every compile from scratch: the
first compile a user meets); without it Inductor's caches are whatever the machine has (run once first to
fill them). Prints one line per graph; nothing is written.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from cli_case import without_measurements  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff")
    ap.add_argument("graphs", nargs="+", metavar="GRAPH:INPUTS")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    env = dict(os.environ)
    if a.cold:
        env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.graphs:
            graph, inputs = spec.split(":")
            times = {"off": [], "on": []}
            reports = {}
            for _ in range(a.runs):
                for mode in ("off", "on"):
                    report = os.path.join(tmp, f"{mode}.json")
                    start = time.monotonic()
                    run = subprocess.run([a.pt2diff, graph, inputs, "--device", a.device, "--overlap", mode, "--json", report],
                                         capture_output=True, text=True, env=env)
                    times[mode].append(time.monotonic() - start)
                    if run.returncode not in (0, 1):
                        print(f"{graph}: --overlap {mode} exit {run.returncode}: {run.stderr.strip()[-300:]}", file=sys.stderr)
                        return 1
                    with open(report) as f:
                        reports[mode] = json.load(f)
            off, on = statistics.median(times["off"]), statistics.median(times["on"])
            same = without_measurements(reports["off"]) == without_measurements(reports["on"])
            compiles = ", ".join(f"{c['what']} {c.get('compile_seconds', 0):.1f} s" for c in reports["off"]["compiles"])
            print(f"{os.path.basename(graph)}: off {off:.2f} s, on {on:.2f} s ({off / on:.2f}x); reports "
                  f"{'the same' if same else 'DIFFERENT'} but for timings; compiles without overlap: {compiles}; "
                  f"runs {[round(t, 2) for t in times['off']]} / {[round(t, 2) for t in times['on']]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
