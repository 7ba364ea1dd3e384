#!/usr/bin/env python3
"""`pt2diff batch --ray` when Ray loses a worker node mid-batch, and when the driver is killed mid-batch
(run by ctest; skipped, exit 77, when ray is not installed in this Python).

    batch_ray_lost.py PT2DIFF

A two-node Ray cluster on this machine (ray.cluster_utils.Cluster: a head and a worker node, one CPU each,
so two cases run at once, one on each node) runs 8 fixture cases. Each case's pt2diff is a wrapper that
notes its start and sleeps 4 s before the diff, so the test knows when both nodes are busy.
1. The worker node is killed (SIGKILL to its raylet and workers) while both nodes run a case: the batch
   finishes on the head; every case has one row, diagnosed or `worker_lost` (at least one: the case that
   was on the worker node); `--resume` runs exactly the worker_lost cases again, and then every case agrees.
2. A new worker node joins; a second batch's driver is SIGKILLed (its whole process group) once a case has
   finished and two are running: `--resume` keeps the finished rows byte for byte, runs the rest, and the
   summary has each case exactly once and equals part 1's final summary but for timings.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from support import FIXTURES, ROOT, Checks, comparable, read_json, runs, validate

try:
    import ray
    from ray.cluster_utils import Cluster
except ImportError:
    print("ray is not installed in", sys.executable, "- skipped (scripts/test.sh installs it)")
    sys.exit(77)

NAMES = ["mlp", "attention", "bf16_block", "cond", "conv_bn_relu", "ln_softmax_gelu", "multi_output_core", "loop_map"]


def inputs_of(name):
    base = name[:-len("_core")] if name.endswith("_core") else name
    return os.path.join(FIXTURES, base + "_inputs.pt")


def driver(pt2diff, manifest, out, address, *extra):
    """`pt2diff batch` as pt2diff runs it (python -m pt2diff_batch), its cases through `pt2diff` (the wrapper):
    started in its own session, so that killing it kills the driver's whole process group."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    return subprocess.Popen([sys.executable, "-m", "pt2diff_batch", "--pt2diff", pt2diff, manifest, "--out", out, "--ray", address,
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def wait_for(what, predicate, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    print(f"timed out waiting for {what}")
    return False


def finished_rows(out):
    folder = os.path.join(out, "cases")
    return sorted(k for k in (os.listdir(folder) if os.path.isdir(folder) else []) if os.path.exists(os.path.join(folder, k, "row.json")))


def main():
    pt2diff = sys.argv[1]
    c = Checks("batch on ray, lost workers")
    tmp = tempfile.mkdtemp(prefix="pt2diff-batch-lost-")
    cluster = None
    try:
        marks = os.path.join(tmp, "marks")
        os.makedirs(marks)
        wrapper = os.path.join(tmp, "slow-pt2diff")
        with open(wrapper, "w") as f:  # a diff (not `inspect`) notes its start, then waits 4 s: both nodes busy for a while
            f.write(f"#!/bin/sh\nif [ \"$1\" != inspect ]; then touch {marks}/diff-$$; sleep 4; fi\nexec {pt2diff} \"$@\"\n")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
        manifest = os.path.join(tmp, "fixtures.tsv")
        with open(manifest, "w") as f:
            for name in NAMES:
                f.write(f"{os.path.join(FIXTURES, name + '.pt2')}\t{inputs_of(name)}\t--compiled eager\n")

        def diffs_started():
            return len(os.listdir(marks))

        start = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        print(f"two-node cluster started in {time.perf_counter() - start:.1f} s at {cluster.address}")

        # 1. the worker node dies while both nodes run a case
        out1 = os.path.join(tmp, "lost")
        run = driver(wrapper, manifest, out1, cluster.address)
        c.check(wait_for("two diffs running", lambda: diffs_started() >= 2 and run.poll() is None),
                f"two cases run at once, one per node ({diffs_started()} diffs started)")
        cluster.remove_node(worker, allow_graceful=False)
        killed_at = time.perf_counter()
        stdout, stderr = run.communicate(timeout=300)
        print(f"the batch finished {time.perf_counter() - killed_at:.1f} s after the worker node was killed (exit {run.returncode})")
        doc = read_json(os.path.join(out1, "summary.json"))
        lost = [r for r in doc["cases"] if r["failure"] == "worker_lost"]
        others = [r for r in doc["cases"] if r["failure"] != "worker_lost"]
        c.check(run.returncode == 1 and validate(doc, "batch-summary.schema.json") is None,
                f"the batch finishes without the node: exit 1, its summary valid ({run.returncode}; {stderr.strip()[-300:]})")
        c.check(len(doc["cases"]) == len(NAMES) and len({r["case"] for r in doc["cases"]}) == len(NAMES),
                f"every case has exactly one row ({len(doc['cases'])} rows)")
        c.check(1 <= len(lost) <= 2 and all("rerun with --resume" in r["message"] for r in lost),
                f"the case(s) on the lost node are worker_lost, saying to resume ({[(r['case'][-20:], r['message'][:120]) for r in lost]})")
        c.check(all(r["verdict"] == "agree" and r["failure"] is None for r in others),
                f"every other case was diagnosed on the head ({[(r['verdict'], r['failure']) for r in others]})")
        before = {r["key"]: runs(out1, r["key"]) for r in doc["cases"]}
        run = driver(wrapper, manifest, out1, cluster.address, "--resume")
        stdout, stderr = run.communicate(timeout=300)
        doc = read_json(os.path.join(out1, "summary.json"))
        again = sorted(k for k in before if runs(out1, k) != before[k])
        c.check(run.returncode == 0 and all(r["verdict"] == "agree" and r["failure"] is None for r in doc["cases"])
                and len(doc["cases"]) == len(NAMES), f"--resume: exit 0, every case agrees ({run.returncode}; {stderr.strip()[-300:]})")
        c.check(again == sorted(r["key"] for r in lost) and all(runs(out1, k) == before[k] + 1 for k in again),
                f"--resume ran exactly the worker_lost cases again, once each ({len(again)} of {len(before)})")
        reference = doc

        # 2. the driver is killed mid-batch
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        shutil.rmtree(marks)
        os.makedirs(marks)
        out2 = os.path.join(tmp, "driver-killed")
        run = driver(wrapper, manifest, out2, cluster.address)
        c.check(wait_for("a finished case and two running", lambda: len(finished_rows(out2)) >= 1 and diffs_started() >= 3),
                f"a case finished and two more started ({len(finished_rows(out2))} finished)")
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        kept = {k: open(os.path.join(out2, "cases", k, "row.json"), "rb").read() for k in finished_rows(out2)}
        c.check(0 < len(kept) < len(NAMES), f"the killed driver left {len(kept)} of {len(NAMES)} rows")
        run = driver(wrapper, manifest, out2, cluster.address, "--resume")
        stdout, stderr = run.communicate(timeout=300)
        doc = read_json(os.path.join(out2, "summary.json"))
        c.check(run.returncode == 0 and len(doc["cases"]) == len(NAMES) and len({r["key"] for r in doc["cases"]}) == len(NAMES),
                f"--resume after the driver's death: exit 0, each case once ({run.returncode}; {len(doc['cases'])} rows; {stderr.strip()[-300:]})")
        c.check(all(open(os.path.join(out2, "cases", k, "row.json"), "rb").read() == v for k, v in kept.items())
                and all(runs(out2, k) == 1 for k in kept), f"the {len(kept)} rows finished before the kill are kept byte for byte, not rerun")
        strip = lambda d: [{k: v for k, v in r.items() if k not in ("graph", "inputs", "case_dir", "report_json", "report_html")}
                           for r in comparable(d)["cases"]]
        c.check(strip(doc) == strip(reference), "the summary equals part 1's final one but for timings and paths")
    finally:
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
