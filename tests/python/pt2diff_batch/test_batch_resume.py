"""A batch killed mid-way (SIGKILL to the driver's process group) and resumed: nothing finished is lost,
nothing finished is run again. A ctest, label batch (tests/cli_case.py says how to run it alone).

The corpus is every fixture under `--compiled eager`, one case at a time. Once 4 cases have finished the
driver's group is killed; then the summary on disk lists the finished cases (incomplete; the last one may
be missing when the kill fell between its row and the summaries' rewrite), and
`--resume` runs the rest: every row written before the kill is unchanged byte for byte, each case finished
before the kill was started once (runs.jsonl), a case killed mid-run is started once more, and the final
summary is complete.
"""
import glob
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402
from batch_support import batch, read_json, runs  # noqa: E402


def finished_rows(out):
    found = {}
    for path in glob.glob(os.path.join(out, "cases", "*", "row.json")):
        with open(path, "rb") as f:
            found[os.path.basename(os.path.dirname(path))] = f.read()
    return found


class KilledAndResumed(CliTestCase):
    """The batch killed after 4 finished cases, then resumed, in setUpClass."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.out = out = os.path.join(cls.tmp, "out")
        args = [cls.fixtures, "--out", out, "--jobs", "1", "--", "--compiled", "eager"]
        driver = subprocess.Popen([cls.cli, "batch", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + 120
        while len(finished_rows(out)) < 4 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        cls.before = finished_rows(out)
        cls.total = len([n for n in os.listdir(cls.fixtures) if n.endswith(".pt2")])
        cls.interrupted = read_json(os.path.join(out, "summary.json"))
        started = {os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(out, "cases", "*", "runs.jsonl"))}
        cls.cut = started - set(cls.before)  # started, not finished: killed mid-run

        cls.resumed = batch(cls.cli, args[0], "--resume", *args[1:])
        cls.after = finished_rows(out)
        cls.final = read_json(os.path.join(out, "summary.json"))

    def test_killed_mid_way(self):
        self.assertTrue(4 <= len(self.before) < self.total, f"killed after {len(self.before)} of {self.total} cases had finished")

    def test_summary_on_disk_lists_the_finished_cases(self):
        """The summary lists the finished cases (at most the last one missing) and says incomplete."""
        # Rows are written before the summaries are rewritten: a kill between the two leaves the summary one
        # finished case behind (the rows are the record; --resume rewrites it), never ahead.
        listed = {r["key"] for r in self.interrupted["cases"]}
        self.assertTrue(not self.interrupted["complete"] and listed <= set(self.before) and len(self.before) - len(listed) <= 1,
                        f"the summary on disk lists the finished cases (at most the last one missing: killed before the rewrite) "
                        f"and says incomplete ({len(listed)} rows of {len(self.before)} finished)")
        self.assertValidReport(self.interrupted, "batch-summary")

    def test_at_most_one_case_cut(self):
        self.assertLessEqual(len(self.cut), 1, f"at most one case was running when killed ({len(self.cut)})")

    def test_resumed_batch_finishes(self):
        resumed = self.resumed
        self.assertEqual(resumed.returncode, 1, "the resumed batch finishes (exit 1: 4 fixtures cannot run under eager) "
                                                f"({resumed.returncode}; {resumed.stderr.strip()[-300:]})")

    def test_finished_rows_unchanged(self):
        self.assertTrue(all(self.after.get(k) == v for k, v in self.before.items()),
                        f"the {len(self.before)} rows finished before the kill are unchanged")

    def test_finished_cases_started_once(self):
        self.assertTrue(all(runs(self.out, k) == 1 for k in self.before), "each case finished before the kill was started once")

    def test_cut_case_started_again(self):
        self.assertTrue(all(runs(self.out, k) == 2 for k in self.cut),
                        f"the case killed mid-run was started again ({sorted(self.cut)})")

    def test_every_other_case_ran_once(self):
        after = self.after
        others = {k: runs(self.out, k) for k in set(after) - set(self.before) - self.cut}
        self.assertTrue(len(after) == self.total and all(n == 1 for n in others.values()),
                        f"every other case ran once, after the resume: {len(after)} rows "
                        f"(of {self.total}; started more than once: {sorted(k for k, n in others.items() if n != 1)})")

    def test_final_summary_complete(self):
        """The final summary is complete, and no attempt directory is left."""
        final, attempts = self.final, glob.glob(os.path.join(self.out, "cases", "*", "attempt-*"))
        self.assertTrue(final["complete"] and len(final["cases"]) == self.total and not attempts,
                        "the final summary is complete, and no attempt directory is left "
                        f"(complete {final['complete']}, {len(final['cases'])} of {self.total} rows, left {attempts})")


if __name__ == "__main__":
    unittest.main()
