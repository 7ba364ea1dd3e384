"""`pt2diff batch --ray` when Ray loses a worker node mid-batch, and when the driver is killed mid-batch. A ctest,
labels batch, ray and slow (tests/cli_case.py says how to run it alone); skipped when ray is not installed in this
Python.

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
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import ROOT, CliTestCase  # noqa: E402
from batch_support import comparable, inputs_of, read_json, runs  # noqa: E402

try:
    from ray.cluster_utils import Cluster
except ImportError:
    Cluster = None

NAMES = ["mlp", "attention", "bf16_block", "cond", "conv_bn_relu", "ln_softmax_gelu", "multi_output_core", "loop_map"]


def driver(pt2diff, manifest, out, address, *extra):
    """`pt2diff batch` as pt2diff runs it (python -m pt2diff_batch), its cases through `pt2diff` (the wrapper):
    started in its own session, so that killing it kills the driver's whole process group."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    return subprocess.Popen([sys.executable, "-m", "pt2diff_batch", "--pt2diff", pt2diff, manifest, "--out", out,
                             "--ray", address, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def wait_for(predicate, timeout=120):
    """Whether `predicate()` came true within `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def finished_rows(out):
    folder = os.path.join(out, "cases")
    return sorted(k for k in (os.listdir(folder) if os.path.isdir(folder) else [])
                  if os.path.exists(os.path.join(folder, k, "row.json")))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class LostWorkers(CliTestCase):
    """Both parts on one two-node cluster, in setUpClass (part 2 compares with part 1's final summary)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if Cluster is None:
            raise unittest.SkipTest(f"ray is not installed in {sys.executable} (scripts/test.sh installs it)")
        tmp = cls.tmp
        cls.marks = marks = os.path.join(tmp, "marks")
        os.makedirs(marks)
        wrapper = os.path.join(tmp, "slow-pt2diff")
        with open(wrapper, "w") as f:  # a diff (not `inspect`) notes its start, then waits 4 s: both nodes busy for a while
            f.write(f"#!/bin/sh\nif [ \"$1\" != inspect ]; then touch {marks}/diff-$$; sleep 4; fi\nexec {cls.cli} \"$@\"\n")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
        manifest = os.path.join(tmp, "fixtures.tsv")
        with open(manifest, "w") as f:
            for name in NAMES:
                f.write(f"{os.path.join(cls.fixtures, name + '.pt2')}\t{inputs_of(cls.fixtures, name)}\t--compiled eager\n")

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        cls.addClassCleanup(cluster.shutdown)
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()

        # 1. the worker node dies while both nodes run a case
        out1 = cls.out1 = os.path.join(tmp, "lost")
        run = driver(wrapper, manifest, out1, cluster.address)
        cls.both_busy = wait_for(lambda: cls.diffs_started() >= 2 and run.poll() is None)
        cls.diffs_when_busy = cls.diffs_started()
        cluster.remove_node(worker, allow_graceful=False)
        _, stderr = run.communicate(timeout=300)
        cls.lost_run = (run.returncode, stderr)
        cls.lost_doc = doc = read_json(os.path.join(out1, "summary.json"))
        cls.before = {r["key"]: runs(out1, r["key"]) for r in doc["cases"]}
        run = driver(wrapper, manifest, out1, cluster.address, "--resume")
        _, stderr = run.communicate(timeout=300)
        cls.resumed_run = (run.returncode, stderr)
        cls.reference = read_json(os.path.join(out1, "summary.json"))

        # 2. the driver is killed mid-batch
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        shutil.rmtree(marks)
        os.makedirs(marks)
        out2 = cls.out2 = os.path.join(tmp, "driver-killed")
        run = driver(wrapper, manifest, out2, cluster.address)
        cls.mid_batch = wait_for(lambda: len(finished_rows(out2)) >= 1 and cls.diffs_started() >= 3)
        cls.finished_when_killed = len(finished_rows(out2))
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        cls.kept = {k: read_bytes(os.path.join(out2, "cases", k, "row.json")) for k in finished_rows(out2)}
        run = driver(wrapper, manifest, out2, cluster.address, "--resume")
        _, stderr = run.communicate(timeout=300)
        cls.after_kill_run = (run.returncode, stderr)
        cls.after_kill_doc = read_json(os.path.join(out2, "summary.json"))

    @classmethod
    def diffs_started(cls):
        return len(os.listdir(cls.marks))

    def lost(self):
        return [r for r in self.lost_doc["cases"] if r["failure"] == "worker_lost"]

    # 1. the worker node dies while both nodes run a case

    def test_1_two_cases_at_once(self):
        """Two cases ran at once, one per node, before the worker node was killed."""
        self.assertTrue(self.both_busy, f"two cases run at once, one per node ({self.diffs_when_busy} diffs started; "
                                        "timed out waiting for two diffs running)")

    def test_1_batch_finishes_without_the_node(self):
        code, stderr = self.lost_run
        self.assertEqual(code, 1,
                         f"the batch finishes without the node: exit 1, its summary valid ({code}; {stderr.strip()[-300:]})")
        self.assertValidReport(self.lost_doc, "batch-summary")

    def test_1_one_row_per_case(self):
        cases = self.lost_doc["cases"]
        self.assertTrue(len(cases) == len(NAMES) and len({r["case"] for r in cases}) == len(NAMES),
                        f"every case has exactly one row ({len(cases)} rows)")

    def test_1_lost_cases_say_to_resume(self):
        lost = self.lost()
        self.assertTrue(1 <= len(lost) <= 2 and all("rerun with --resume" in r["message"] for r in lost),
                        "the case(s) on the lost node are worker_lost, saying to resume "
                        f"({[(r['case'][-20:], r['message'][:120]) for r in lost]})")

    def test_1_other_cases_diagnosed_on_the_head(self):
        others = [r for r in self.lost_doc["cases"] if r["failure"] != "worker_lost"]
        self.assertTrue(all(r["verdict"] == "agree" and r["failure"] is None for r in others),
                        f"every other case was diagnosed on the head ({[(r['verdict'], r['failure']) for r in others]})")

    def test_1_resume_every_case_agrees(self):
        code, stderr = self.resumed_run
        doc = self.reference
        self.assertTrue(code == 0 and all(r["verdict"] == "agree" and r["failure"] is None for r in doc["cases"])
                        and len(doc["cases"]) == len(NAMES),
                        f"--resume: exit 0, every case agrees ({code}; {stderr.strip()[-300:]})")

    def test_1_resume_runs_the_lost_cases_again(self):
        """--resume ran exactly the worker_lost cases again, once each."""
        before = self.before
        again = sorted(k for k in before if runs(self.out1, k) != before[k])
        self.assertTrue(again == sorted(r["key"] for r in self.lost())
                        and all(runs(self.out1, k) == before[k] + 1 for k in again),
                        f"--resume ran exactly the worker_lost cases again, once each ({len(again)} of {len(before)})")

    # 2. the driver is killed mid-batch

    def test_2_killed_mid_batch(self):
        """A case finished and two more started before the driver was killed."""
        self.assertTrue(self.mid_batch, f"a case finished and two more started ({self.finished_when_killed} finished; "
                                        "timed out waiting for a finished case and two running)")

    def test_2_killed_driver_left_some_rows(self):
        self.assertTrue(0 < len(self.kept) < len(NAMES), f"the killed driver left {len(self.kept)} of {len(NAMES)} rows")

    def test_2_resume_each_case_once(self):
        code, stderr = self.after_kill_run
        cases = self.after_kill_doc["cases"]
        self.assertTrue(code == 0 and len(cases) == len(NAMES) and len({r["key"] for r in cases}) == len(NAMES),
                        "--resume after the driver's death: exit 0, each case once "
                        f"({code}; {len(cases)} rows; {stderr.strip()[-300:]})")

    def test_2_finished_rows_kept(self):
        """The rows finished before the kill are kept byte for byte, not rerun."""
        out2, kept = self.out2, self.kept
        self.assertTrue(all(read_bytes(os.path.join(out2, "cases", k, "row.json")) == v for k, v in kept.items())
                        and all(runs(out2, k) == 1 for k in kept),
                        f"the {len(kept)} rows finished before the kill are kept byte for byte, not rerun")

    def test_2_summary_equals_part_1(self):
        def strip(d):
            return [{k: v for k, v in r.items() if k not in ("graph", "inputs", "case_dir", "report_json", "report_html")}
                    for r in comparable(d)["cases"]]
        self.assertEqual(strip(self.after_kill_doc), strip(self.reference),
                         "the summary equals part 1's final one but for timings and paths")


if __name__ == "__main__":
    unittest.main()
