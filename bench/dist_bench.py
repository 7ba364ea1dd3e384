#!/usr/bin/env python3
"""What `pt2diff dist` costs against the user's own distributed step (docs/performance.md, docs/distributed.md), run by
hand:

    python bench/dist_bench.py build/pt2diff [--ranks 2,4] [--note TEXT]
    python bench/run.py --render-only        (renders bench/results/dist.json into docs/performance.md)

For the tensor-parallel training step of tests/python/pt2diff_capture/ranks/tp_step.py on N gloo ranks of this machine:
- the user's step: the script under torch.compile (Inductor), forward and backward, one step, run by
  torch.distributed.run with a fresh Inductor cache: the whole job's wall time (process starts, imports, the group,
  the cold compile, the step);
- the capture: the same script with pt2diff_capture's backend (`python -m pt2diff_capture ranks`);
- `pt2diff dist` on that capture, with a fresh Inductor cache: every graph of every rank (lockstep eager and fp64, the
  compiled ranks in a gloo group, each rank-local program's diff), and with `--no-rank-local`.
Memory: the most resident memory (VmRSS) that the job's whole process tree (engine, workers, the compilers they start,
the ranks) held at once, sampled every 50 ms; and the engine's own peak (VmHWM) for pt2diff.

Writes bench/results/dist.json (bench/run.py's results format, section `dist`).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minifier_bench  # noqa: E402  (its machine(): the results' caption)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "python", "pt2diff_capture", "ranks", "tp_step.py")


def tree_rss(root):
    """Bytes of VmRSS held by `root` and every process below it."""
    children, rss = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/status") as f:
                kb = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(pid))
        rss[int(pid)] = kb * 1024
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def measured(argv, env):
    """(wall seconds, peak bytes of the process tree, stdout, returncode) of one command."""
    peak = [0]
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(p.pid))
            time.sleep(0.05)

    t = threading.Thread(target=sample)
    t.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    if p.returncode not in (0, 1):
        sys.exit(f"dist_bench: {' '.join(argv)} exited {p.returncode}: {err[-3000:]}")
    return wall, peak[0], out, p.returncode


def row(cli, python, n, tmp):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1")
    cache = tempfile.mkdtemp(prefix="inductor-", dir=tmp)
    user_wall, user_peak, _, _ = measured([python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
                                           SCRIPT, os.path.join(tmp, "unused")],
                                          dict(env, TP_BACKEND="inductor", TORCHINDUCTOR_CACHE_DIR=cache))
    out = os.path.join(tmp, f"captured_{n}")
    cap_wall, cap_peak, _, _ = measured([python, "-m", "pt2diff_capture", "ranks", "--nproc", str(n), SCRIPT, out], env)
    r = {"ranks": n, "user_s": user_wall, "user_peak": user_peak, "capture_s": cap_wall, "capture_peak": cap_peak}
    for key, extra in (("dist", []), ("dist_outputs_only", ["--no-rank-local"])):
        report = os.path.join(tmp, f"{key}_{n}.json")
        cache = tempfile.mkdtemp(prefix="inductor-", dir=tmp)
        wall, peak, _, rc = measured([cli, "dist", out, "--json", report, "--inductor-cache", cache, *extra], env)
        with open(report) as f:
            d = json.load(f)
        r[key] = {"wall_s": wall, "peak": peak, "seconds": d["seconds"], "graphs": len(d["graphs"]),
                  "verdict": "agree" if not d["diverged"] and not d["compiled_failed"] else "diverge", "exit": rc}
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff", help="the pt2diff CLI (build/pt2diff)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile, for the caption")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pt2diff-dist-bench-")
    rows = [row(os.path.abspath(a.pt2diff), a.python, int(n), tmp) for n in a.ranks.split(",")]
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    res = {"section": "dist", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "commit": rev + ("-dirty" if dirty else ""), "runner": "bench/dist_bench.py", "machine": minifier_bench.machine(a.python, "cpu"),
           "torch": torch_version,
           "commands": [{"argv": ["python", "bench/dist_bench.py", "build/pt2diff", "--ranks", a.ranks], "note": a.note}],
           "data": {"rows": rows}}
    result = os.path.join(ROOT, "bench", "results", "dist.json")
    with open(result, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(rows, indent=1))
    print(f"wrote {os.path.relpath(result)}; render with: python bench/run.py --render-only", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
