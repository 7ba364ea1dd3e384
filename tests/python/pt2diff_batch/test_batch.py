"""Unit tests of pt2diff_batch's pieces that need no pt2diff binary: options, inputs matching, rows from exit
codes and reports, the memory gate, the progress line, the summary's comparable form."""
import io
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

from pt2diff_batch import summary  # noqa: E402
from pt2diff_batch.cases import Case, assign_keys, matching_inputs, merge_options  # noqa: E402
from pt2diff_batch.progress import Progress  # noqa: E402
from pt2diff_batch.rows import make_row  # noqa: E402
from pt2diff_batch.runner import MemoryGate, inspect_flags  # noqa: E402


def case(**kw):
    base = dict(name="g.pt2", graph="/x/g.pt2", inputs=None, options=[], source="/x")
    base.update(kw)
    return Case(**base)


def row(**kw):
    args = dict(inspect={"nodes": 3}, returncode=0, timed_out=False, report=None, stderr="", seconds=1.0, inspect_seconds=0.1,
                timeout=60, stage="diff")
    args.update(kw)
    return make_row(case(), **args)


class Options(unittest.TestCase):
    def test_a_manifest_flag_replaces_the_batch_wide_one(self):
        self.assertEqual(merge_options(["--compiled", "eager", "--no-exploded"], ["--compiled", "fault:add:nan"]),
                         ["--no-exploded", "--compiled", "fault:add:nan"])

    def test_repeatable_flags_add(self):
        self.assertEqual(merge_options(["--inductor-config", "a=1"], ["--inductor-config", "b=2"]),
                         ["--inductor-config", "a=1", "--inductor-config", "b=2"])

    def test_inspect_takes_only_loading_flags(self):
        self.assertEqual(inspect_flags(["--compiled", "eager", "--seed", "3", "--random-inputs", "--load-library=x.so"]),
                         ["--seed", "3", "--random-inputs", "--load-library=x.so"])


class Inputs(unittest.TestCase):
    def test_longest_prefix(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("mlp_inputs.pt", "mlp_core_x_inputs.pt"):
                open(os.path.join(d, name), "w").close()
            self.assertEqual(matching_inputs(os.path.join(d, "mlp_core.pt2")), os.path.join(d, "mlp_inputs.pt"))
            self.assertEqual(matching_inputs(os.path.join(d, "mlp_core_x.pt2")), os.path.join(d, "mlp_core_x_inputs.pt"))
            self.assertIsNone(matching_inputs(os.path.join(d, "other.pt2")))

    def test_same_content_same_key(self):
        with tempfile.TemporaryDirectory() as d:
            for name, data in (("a.pt2", b"1"), ("b.pt2", b"1"), ("c.pt2", b"2")):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
            cases = [case(name=n, graph=os.path.join(d, n)) for n in ("a.pt2", "b.pt2", "c.pt2")]
            first = assign_keys(cases)
            self.assertEqual(cases[0].key, cases[1].key)
            self.assertNotEqual(cases[0].key, cases[2].key)
            self.assertEqual([c.name for c in first.values()], ["a.pt2", "c.pt2"])


class Rows(unittest.TestCase):
    def test_failure_kinds(self):
        self.assertEqual(row(returncode=-11)["failure"], "crashed")
        self.assertIn("SIGSEGV", row(returncode=-11)["message"])
        self.assertEqual(row(timed_out=True, returncode=-9)["failure"], "hung")
        self.assertEqual(row(returncode=2, stderr="pt2diff: x.pt2: no such file\n")["message"], "x.pt2: no such file")
        report = {"verdict": "compiler_failed", "outputs": [], "compiles": [
            {"what": "graph", "ok": False, "failure": "compile_failed", "message": "boom\nat line 3", "compile_seconds": 1}]}
        r = row(returncode=4, report=report)
        self.assertEqual((r["failure"], r["message"], r["verdict"]), ("compile_failed", "at line 3", "compiler_failed"))
        self.assertEqual(row(returncode=1, report=None)["failure"], "internal_error")

    def test_diagnosis_and_level_pass_through(self):
        report = {"verdict": "diverged", "seconds": 0.5, "compiles": [{"ok": True}],
                  "outputs": [{"name": "y", "pass": False, "reason": "rmse_exceeds_bound", "level": "fail"}],
                  "localization": {"culprit": {"kind": "single_op", "conclusion": "named", "summary": "s", "nodes": ["mm"],
                                               "ops": ["aten.mm.default"], "sources": ["m.py:3"]},
                                   "hints": [{"kind": "reduction_order", "finding": "inside_envelope"}]}}
        r = row(returncode=1, report=report)
        self.assertIsNone(r["failure"])
        self.assertEqual(r["outputs"][0]["level"], "fail")
        self.assertEqual(r["culprit_op"], "aten.mm.default")
        self.assertEqual(summary.verdict_text(r), "diverged: y FAIL[fail] (rmse_exceeds_bound)")


class Gate(unittest.TestCase):
    def test_a_case_waits_for_memory_but_never_when_alone(self):
        free = [10]
        gate = MemoryGate(0, available=lambda: free[0])
        first = gate.acquire(100)  # alone: starts although it does not fit
        started = threading.Event()
        threading.Thread(target=lambda: (gate.acquire(5), started.set()), daemon=True).start()
        self.assertFalse(started.wait(0.3))  # 10 free - 100 reserved < 5
        gate.release(first)
        self.assertTrue(started.wait(2))
        self.assertEqual(gate.waits, 1)


class ProgressLine(unittest.TestCase):
    def test_quiet_in_a_pipe_and_eta_on_a_terminal(self):
        pipe = io.StringIO()
        p = Progress(4, stream=pipe)
        p.started()
        p.finished(False)
        self.assertEqual(pipe.getvalue(), "")
        tty = io.StringIO()
        p = Progress(4, stream=tty, enabled=True)
        p.started()
        time.sleep(0.01)
        p.finished(True)
        self.assertIn("1/4 done (1 failed), 0 running", tty.getvalue())
        self.assertIn("ETA", tty.getvalue())


class Comparable(unittest.TestCase):
    def test_timings_and_executor_are_left_out(self):
        a = summary.build([row()], sources=["s"], options=[], executor="local", jobs=2, wall_seconds=3, unique=1, complete=True)
        b = summary.build([row(seconds=9.0, inspect_seconds=2.0)], sources=["s"], options=[], executor="ray", jobs="ray",
                          wall_seconds=7, unique=1, complete=True)
        self.assertNotEqual(a, b)
        self.assertEqual(summary.comparable(a), summary.comparable(b))


if __name__ == "__main__":
    unittest.main()
