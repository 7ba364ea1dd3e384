"""Compiles beside the engine's runs (--overlap, engine/diff/compile_ahead.h) give the report the run gives
without them. A ctest, label inductor (tests/cli_case.py says how to run it alone).

1. A real compiler bug: tests/engine/localize/lowp_matmul_worker.py (Inductor computing float32 matrix
   products in bfloat16) on mlp, `--overlap off` and `--overlap on`: the JSON reports are the same but for
   their timings and memory figures (cli_case.without_measurements): verdicts, node table with the exploded compile's column,
   compiles in the same order, localization with its probes, hints. Both runs start their workers through a
   wrapper that notes when each starts (worker server off): without overlap one worker; with it two, the
   second (the exploded compile's) started while the first was still compiling the whole graph.
   The overlapped report has the stage compile_exploded_ahead (the exploded compile, run after run_references).
2. A clean graph (attention_core, stock Inductor): the same report either way.
3. A compiler that cannot start (a worker that exits at once): with overlap the second worker's start ahead
   (Backend::start_ahead) fails unreported, and the run reports what it reports without overlap, exit code
   and report alike.
"""
import json
import os
import stat
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from cli_case import CliTestCase, without_measurements  # noqa: E402
LOWP_WORKER = os.path.join(HERE, "localize", "lowp_matmul_worker.py")
OVERLAPS = ("off", "on")


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: {json.dumps(a)[:200]} against {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'the first' if k in a else 'the second'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {json.dumps(a)[:200]} against {json.dumps(b)[:200]}"


class OverlapCase(CliTestCase):
    """`diff` runs pt2diff with a --json report in the class's folder."""

    @classmethod
    def diff(cls, args, name, env=None):
        report = os.path.join(cls.tmp, name + ".json")
        run = subprocess.run([cls.cli, *args, "--json", report], capture_output=True, text=True,
                             env={**os.environ, **(env or {})})
        doc = json.load(open(report)) if os.path.exists(report) else None
        return run, doc

    def assertSameReport(self, off, on, what):
        self.assertIsNotNone(off, "no report without overlap")
        self.assertIsNotNone(on, "no report with overlap")
        self.assertIsNone(first_difference(without_measurements(off), without_measurements(on)), what)


class PlantedBug(OverlapCase):
    """mlp with its matmuls in bf16 (exploded suspects, localization, hints), --overlap off then on, each run's
    workers started through a wrapper that notes when."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        wrapper = os.path.join(cls.tmp, "python-noting-workers")
        graph, inputs = os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt")
        cls.runs, cls.reports, cls.starts = {}, {}, {}
        for overlap in OVERLAPS:
            log = os.path.join(cls.tmp, f"workers-{overlap}.log")
            with open(wrapper, "w") as f:
                f.write(f"#!/bin/sh\necho \"$(date +%s.%N)\" >> {log}\nexec {sys.executable} \"$@\"\n")
            os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
            cls.runs[overlap], cls.reports[overlap] = cls.diff(
                [graph, inputs, "--compiled", f"external:{wrapper} {LOWP_WORKER}", "--overlap", overlap], f"lowp-{overlap}",
                {"PT2DIFF_WORKER_SERVER": "0"})
            cls.starts[overlap] = sorted(float(t) for t in open(log).read().split()) if os.path.exists(log) else []

    def setUp(self):
        for overlap in OVERLAPS:
            self.assertIsNotNone(self.reports[overlap], f"--overlap {overlap}: no report: {self.runs[overlap].stderr[-2000:]}")

    def test_diverged_and_localized(self):
        """Either way the graph diverges (exit 1) and is localized to one op."""
        for overlap in OVERLAPS:
            with self.subTest(overlap=overlap):
                run, report = self.runs[overlap], self.reports[overlap]
                culprit = (report.get("localization") or {}).get("culprit") or {}
                self.assertTrue(run.returncode == 1 and culprit.get("kind") == "single_op",
                                f"mlp, matmuls in bf16, --overlap {overlap}: diverged (exit 1), localized to one op "
                                f"({run.returncode}, {culprit.get('nodes')}, {len(report['compiles'])} compiles)\n  "
                                + run.stderr[-2000:] + run.stdout[-2000:])

    def test_same_report(self):
        self.assertSameReport(self.reports["off"], self.reports["on"],
                              "the same report, timings aside, with and without overlap (compiles, nodes, localization, hints)")

    def test_exploded_column(self):
        """The overlapped report has the exploded compile's column."""
        exploded = [n for n in self.reports["on"]["nodes"] if any("compiled_local" in v for v in n.get("values", []))]
        self.assertGreater(len(exploded), 0, f"the exploded compile's column is there ({len(exploded)} nodes)")

    def test_one_worker_without_overlap(self):
        self.assertEqual(len(self.starts["off"]), 1, f"without overlap, one worker ({len(self.starts['off'])} started)")

    def test_stage_compile_exploded_ahead(self):
        """The exploded compile started ahead has its own stage record, right after run_references: its wait and
        compile are not counted as the lockstep runs' time."""
        names = {k: [st["name"] for st in self.reports[k]["stages"]] for k in OVERLAPS}
        ahead = [st["seconds"] for st in self.reports["on"]["stages"] if st["name"] == "compile_exploded_ahead"]
        exploded_s = sum(c["compile_seconds"] + c["run_seconds"]
                         for c in self.reports["on"]["compiles"] if c["what"] == "exploded")
        self.assertTrue("compile_exploded_ahead" not in names["off"]
                        and names["on"][1:3] == ["run_references", "compile_exploded_ahead"]
                        and ahead and ahead[0] >= 0.9 * exploded_s,
                        f"with --overlap on, the stage compile_exploded_ahead after run_references holds the exploded compile "
                        f"({ahead} s, the compile and run {exploded_s:.2f} s); without overlap no such stage\n  {names}")

    def test_two_workers_with_overlap(self):
        """With overlap a second worker starts while the first still compiles the whole graph."""
        graph_compile = self.reports["on"]["compiles"][0]["compile_seconds"]
        on = self.starts["on"]
        self.assertTrue(len(on) == 2 and on[1] - on[0] < graph_compile,
                        f"with --overlap on, two workers, the second started {on[1] - on[0] if len(on) == 2 else -1:.2f} s after "
                        f"the first, within the whole graph's compile ({graph_compile:.2f} s)")


class CleanGraph(OverlapCase):
    """attention_core through the stock Inductor, --overlap off then on."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        graph, inputs = os.path.join(cls.fixtures, "attention_core.pt2"), os.path.join(cls.fixtures, "attention_inputs.pt")
        cls.runs = {overlap: cls.diff([graph, inputs, "--overlap", overlap], f"attention-{overlap}") for overlap in OVERLAPS}

    def test_agrees(self):
        for overlap in OVERLAPS:
            with self.subTest(overlap=overlap):
                run, _ = self.runs[overlap]
                self.assertEqual(run.returncode, 0,
                                 f"attention_core, --overlap {overlap}: agrees (exit {run.returncode})\n  {run.stderr[-2000:]}")

    def test_same_report(self):
        self.assertSameReport(self.runs["off"][1], self.runs["on"][1], "attention_core: the same report with and without overlap")


class CompilerThatCannotStart(OverlapCase):
    """attention_core with `--compiled external:/bin/false`, --overlap off then on."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        graph, inputs = os.path.join(cls.fixtures, "attention_core.pt2"), os.path.join(cls.fixtures, "attention_inputs.pt")
        cls.runs = {overlap: cls.diff([graph, inputs, "--compiled", "external:/bin/false", "--overlap", overlap],
                                      f"dead-{overlap}") for overlap in OVERLAPS}

    def test_same_exit_code_and_compile_failure(self):
        """The same exit code either way, neither agree nor diverged, and the compile reported failed."""
        codes = {overlap: run.returncode for overlap, (run, _) in self.runs.items()}
        failed = ((self.runs["off"][1] or {}).get("compiles") or [{}])[0]
        self.assertTrue(codes["off"] == codes["on"] and codes["off"] not in (0, 1) and failed.get("ok") is False,
                        f"a worker that cannot start: exit {codes['off']} without overlap, {codes['on']} with; compile failure "
                        f"'{failed.get('failure')}'")

    def test_same_report(self):
        self.assertSameReport(self.runs["off"][1], self.runs["on"][1],
                              "a worker that cannot start: the same report with and without overlap")


if __name__ == "__main__":
    unittest.main()
