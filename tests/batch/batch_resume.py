#!/usr/bin/env python3
"""A batch killed mid-way (SIGKILL to the driver's process group) and resumed: nothing finished is lost,
nothing finished is run again (run by ctest).

    batch_resume.py PT2DIFF

The corpus is every fixture under `--compiled eager`, one case at a time. Once 4 cases have finished the
driver's group is killed; then the summary on disk lists the finished cases (incomplete; the last one may
be missing when the kill fell between its row and the summaries' rewrite), and
`--resume` runs the rest: every row written before the kill is unchanged byte for byte, each case finished
before the kill was started once (runs.jsonl), a case killed mid-run is started once more, and the final
summary is complete.
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from support import FIXTURES, Checks, batch, read_json, runs, validate


def finished_rows(out):
    found = {}
    for path in glob.glob(os.path.join(out, "cases", "*", "row.json")):
        with open(path, "rb") as f:
            found[os.path.basename(os.path.dirname(path))] = f.read()
    return found


def main():
    pt2diff = sys.argv[1]
    c = Checks("batch resume")
    tmp = tempfile.mkdtemp(prefix="pt2diff-batch-resume-")
    try:
        out = os.path.join(tmp, "out")
        args = [FIXTURES, "--out", out, "--jobs", "1", "--", "--compiled", "eager"]
        driver = subprocess.Popen([pt2diff, "batch", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + 120
        while len(finished_rows(out)) < 4 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        before = finished_rows(out)
        total = len([n for n in os.listdir(FIXTURES) if n.endswith(".pt2")])
        c.check(4 <= len(before) < total, f"killed after {len(before)} of {total} cases had finished")
        interrupted = read_json(os.path.join(out, "summary.json"))
        # Rows are written before the summaries are rewritten: a kill between the two leaves the summary one
        # finished case behind (the rows are the record; --resume rewrites it), never ahead.
        listed = {r["key"] for r in interrupted["cases"]}
        c.check(not interrupted["complete"] and listed <= set(before) and len(before) - len(listed) <= 1
                and validate(interrupted, "batch-summary.schema.json") is None,
                f"the summary on disk lists the finished cases (at most the last one missing: killed before the rewrite) "
                f"and says incomplete ({len(listed)} rows of {len(before)} finished)")
        started = {os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(out, "cases", "*", "runs.jsonl"))}
        cut = started - set(before)  # started, not finished: killed mid-run
        c.check(len(cut) <= 1, f"at most one case was running when killed ({len(cut)})")

        resumed = batch(pt2diff, args[0], "--resume", *args[1:])
        c.check(resumed.returncode == 1, f"the resumed batch finishes (exit 1: 4 fixtures cannot run under eager) ({resumed.returncode}; "
                                         f"{resumed.stderr.strip()[-300:]})")
        after = finished_rows(out)
        c.check(all(after.get(k) == v for k, v in before.items()), f"the {len(before)} rows finished before the kill are unchanged")
        c.check(all(runs(out, k) == 1 for k in before), "each case finished before the kill was started once")
        c.check(all(runs(out, k) == 2 for k in cut), f"the case killed mid-run was started again ({sorted(cut)})")
        c.check(len(after) == total and all(runs(out, k) == 1 for k in set(after) - set(before) - cut),
                f"every other case ran once, after the resume: {len(after)} rows")
        final = read_json(os.path.join(out, "summary.json"))
        c.check(final["complete"] and len(final["cases"]) == total and not glob.glob(os.path.join(out, "cases", "*", "attempt-*")),
                "the final summary is complete, and no attempt directory is left")
        print(f"resume: {len(before)} cases finished before SIGKILL, {len(cut)} cut mid-run and rerun, "
              f"{total - len(before) - len(cut)} run after the resume, 0 finished cases run twice")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
