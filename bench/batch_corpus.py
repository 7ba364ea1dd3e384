#!/usr/bin/env python3
"""Wall time of `pt2diff batch` over every fixture: one case at a time, --jobs 2, and Ray with 2 local
workers (a Ray instance started here, num_cpus=2); and the per-case overhead of batch.

    python bench/batch_corpus.py build/pt2diff [-- PT2DIFF OPTIONS]     (default options: --compiled eager)

Overhead per case = (wall time of the serial batch - the sum of the cases' diagnosis seconds) / cases:
the inspect of each case, process starts, hashing, publishing rows and rewriting the summaries.
Figures in docs/performance.md ("pt2diff batch").
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    pt2diff = os.path.abspath(sys.argv[1])
    options = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else ["--compiled", "eager"]
    fixtures = os.path.join(ROOT, "fixtures")
    tmp = tempfile.mkdtemp(prefix="pt2diff-bench-batch-")
    results = {}

    def run(name, *args):
        out = os.path.join(tmp, name.replace(" ", "_"))
        start = time.perf_counter()
        proc = subprocess.run([pt2diff, "batch", fixtures, "--out", out, *args, "--", *options], capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode not in (0, 1):
            sys.exit(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}")
        with open(os.path.join(out, "summary.json")) as f:
            doc = json.load(f)
        cases = doc["cases"]
        results[name] = {"wall": wall, "cases": len(cases), "diagnosis": sum(r["seconds"] for r in cases),
                         "inspect": sum(r["inspect_seconds"] for r in cases)}

    try:
        run("serial", "--jobs", "1")
        run("--jobs 2", "--jobs", "2")
        import ray
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=os.path.join(tmp, "ray-tmp"), log_to_driver=False)
        ray_start = time.perf_counter() - start
        try:
            run("ray, 2 workers", "--ray", ray.get_runtime_context().gcs_address)
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"pt2diff batch over {results['serial']['cases']} fixtures, options {' '.join(options)}, {os.cpu_count()} CPUs")
    print(f"{'run':<16} {'wall s':>8} {'sum of diagnoses s':>19} {'sum of inspects s':>18}")
    for name, r in results.items():
        print(f"{name:<16} {r['wall']:8.1f} {r['diagnosis']:19.1f} {r['inspect']:18.1f}")
    s = results["serial"]
    print(f"ray start (not in the ray row): {ray_start:.1f} s")
    print(f"overhead per case (serial wall - diagnoses) / cases: {(s['wall'] - s['diagnosis']) / s['cases']:.2f} s, "
          f"of which inspect {s['inspect'] / s['cases']:.2f} s")


if __name__ == "__main__":
    main()
