"""Dynamic shapes through the real Inductor: the dynamic compile and the size sweep (docs/dynamic-shapes.md).
A ctest, label inductor (tests/cli_case.py says how to run it alone; the ctest puts build/python on PYTHONPATH for
pt2diff.sweep_sizes).

- TailBugSweep: a tail-only bug planted in Inductor's lowering of sigmoid (wrong past the last multiple of 16 of its
  flattened result: dynamic_batch's [B, 8] is wrong at odd B only), swept with `pt2diff sizes`: every odd size has
  sigmoid as the node verdict's finding, every even size passes, the smallest failing size is 3 and is localized to
  sigmoid; sizes outside the exported range [2, 64] are refused one line each (exit 2) while the others are judged;
  one compile of the graph for the whole sweep (no recompile); JSON valid against docs/sizes.schema.json, CSV and
  HTML written. The culprit's `--repro` directory holds test_repro.py (a plain-PyTorch unit test of the window): it
  passes under the stock Inductor and fails with the planted lowering (both run).
- DynamicOnlyBug: a bug that lives only in the dynamic compile (the last row wrong when the size is symbolic), swept
  from Python (pt2diff.sweep_sizes): every size fails at sigmoid, and the static compile at one size passes
  (static_check).
- CleanDynamicGraphs: decoder_seq (a decoder block, sequence length dynamic) and conv_batch (a conv net, batch
  dynamic) agree with the stock Inductor at every default size, compiled dynamic.
"""
import csv
import io
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase, schema  # noqa: E402
BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")


def planted(where):
    env = dict(os.environ, PT2DIFF_PLANT_OP="sigmoid", PT2DIFF_PLANT_WHERE=where, PT2DIFF_PLANT_ERROR="0.01")
    return env, f"external:{sys.executable} {BUG_WORKER}"


class SweepCase(CliTestCase):
    """What the classes share: the validation of a sweep."""

    def assertValidSweep(self, sweep):
        """The sweep against docs/sizes.schema.json, its shapes against report.schema.json's shape_compile and each
        localized run against report.schema.json (nothing without jsonschema)."""
        try:
            import jsonschema
        except ImportError:
            return
        jsonschema.validate(sweep, schema("sizes"))
        if sweep["shapes"] is not None:
            jsonschema.validate(sweep["shapes"], {"$defs": schema("report")["$defs"], "$ref": "#/$defs/shape_compile"})
        for r in sweep["localized"]:
            self.assertValidReport(r)


class TailBugSweep(SweepCase):
    """The tail-only bug, swept by the CLI (one run, in setUpClass); 1 and 65 are outside the exported range [2, 64]."""

    SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.env, compiled = planted("tail:16")
        cls.out = {k: os.path.join(cls.tmp, "tail." + k) for k in ("json", "csv", "html")}
        cls.process = subprocess.run([cls.cli, "sizes", os.path.join(cls.fixtures, "dynamic_batch.pt2"), "--dim",
                                      "s77=" + ",".join(map(str, cls.SIZES)), "--compiled", compiled, "--device", cls.device,
                                      "--json", cls.out["json"], "--csv", cls.out["csv"], "--html", cls.out["html"],
                                      "--repro", os.path.join(cls.tmp, "repro")],
                                     capture_output=True, text=True, env=cls.env)
        cls.sweep = json.load(open(cls.out["json"])) if os.path.exists(cls.out["json"]) else None

    def written(self):
        """The sweep's JSON, after checking that it is written."""
        self.assertIsNotNone(self.sweep, "the sweep's JSON is written")
        return self.sweep

    def judged(self):
        return [q for q in self.written()["points"] if q["judged"]]

    def test_refused_sizes_make_exit_2(self):
        """Refused sizes make exit 2 after the others are judged."""
        p = self.process
        self.assertEqual(p.returncode, 2,
                         f"refused sizes make exit 2 after the others are judged ({p.returncode}): {p.stderr[-300:]}")

    def test_one_line_per_refused_size(self):
        refused_lines = [ln for ln in self.process.stderr.splitlines() if "refused" in ln]
        self.assertTrue(len(refused_lines) == 2 and all("outside the range [2, 64]" in ln for ln in refused_lines),
                        f"one line per refused size, naming the range: {refused_lines}")

    def test_sweep_is_valid(self):
        self.assertValidSweep(self.written())

    def test_a_row_per_size(self):
        """A row per size asked; 1 and 65 are refused (not judged)."""
        points = {q["size"]: q for q in self.written()["points"]}
        self.assertEqual(sorted(points), self.SIZES, f"a row per size asked: {sorted(points)}")
        self.assertTrue(not points[1]["judged"] and not points[65]["judged"], "1 and 65 are refused")

    def test_sigmoid_stands_out_at_every_odd_size(self):
        judged = self.judged()
        odd = [q["size"] for q in judged if q["size"] % 2]
        flagged = [q["size"] for q in judged if q["level"] != "pass" and q["node"] == "sigmoid"]
        self.assertEqual(flagged, odd, f"sigmoid stands out at every odd size and only there: {flagged} (odd: {odd})")

    def test_every_even_size_passes(self):
        judged = self.judged()
        clean = [q["size"] for q in judged if q["level"] == "pass"]
        self.assertEqual(clean, [q["size"] for q in judged if q["size"] % 2 == 0], f"every even size passes: {clean}")

    def test_the_smallest_failing_size_is_3(self):
        failing = [q["size"] for q in self.judged() if q["fails"]]
        self.assertTrue(failing and failing[0] == 3 and all(v % 2 for v in failing), f"the smallest failing size is 3: {failing}")

    def test_localized_at_the_smallest_failing_size(self):
        """Localized once, at the smallest failing size, to sigmoid."""
        s = self.written()
        points = {q["size"]: q for q in s["points"]}
        self.assertTrue(points[3]["culprit"] == "sigmoid" and len(s["localized"]) == 1,
                        f"localized at the smallest failing size to sigmoid: {points[3]['culprit']!r}")

    def test_compiled_dynamic(self):
        """Compiled dynamic, x.size(0) in [2, 64]."""
        shapes = self.written()["shapes"] or {}
        self.assertTrue(shapes.get("mode") == "dynamic" and
                        [(d["input"], d["min"], d["max"]) for d in shapes.get("symbols", [])] == [("x.size(0)", 2, 64)],
                        f"compiled dynamic, x.size(0) in [2, 64]: {shapes}")

    def test_one_compile_serves_every_size(self):
        s = self.written()
        self.assertTrue(s["recompiles"] == 0 and all(q["recompiles"] == 0 for q in self.judged()),
                        f"one compile of the graph serves every size (recompiles {s['recompiles']})")

    def test_compiles(self):
        """At most 10 compiles for the whole sweep, localization included."""
        s = self.written()
        self.assertLessEqual(s["compiles"], 10, f"compiles for the whole sweep, localization included: {s['compiles']}")

    def test_csv(self):
        """The CSV has a row per size; the third is size 3, its culprit sigmoid."""
        self.written()
        rows = list(csv.DictReader(io.StringIO(open(self.out["csv"]).read()))) if os.path.exists(self.out["csv"]) else []
        self.assertTrue(len(rows) == len(self.SIZES) and rows[2]["size"] == "3" and rows[2]["culprit"] == "sigmoid",
                        f"CSV rows: {len(rows)}")

    def test_html(self):
        self.written()
        html = open(self.out["html"]).read() if os.path.exists(self.out["html"]) else ""
        self.assertTrue("<svg" in html and "s77=3 fails" in html, "the HTML page plots the sweep, failing sizes marked")

    def repro_test(self):
        """The culprit as a PyTorch unit test (issue 58): the path of test_repro.py, after checking that --repro wrote it."""
        s = self.written()
        repro = (s["localized"][0]["localization"] or {}).get("repro") or {} if s["localized"] else {}
        test = repro.get("test", "")
        self.assertTrue(test.endswith("test_repro.py") and os.path.exists(test), f"--repro wrote test_repro.py: {repro}")
        return test

    def test_repro_passes_under_the_stock_inductor(self):
        stock = subprocess.run([sys.executable, self.repro_test()], capture_output=True, text=True, cwd=self.tmp)
        self.assertTrue(stock.returncode == 0 and "OK" in stock.stderr,
                        f"test_repro.py passes under the stock Inductor: {stock.stderr[-300:]}")

    def test_repro_fails_under_the_planted_lowering(self):
        plant = ("import runpy, sys; sys.path.insert(0, sys.argv[1]); import planted_lowering; planted_lowering.plant(); "
                 "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        bug = subprocess.run([sys.executable, "-c", plant, HERE, self.repro_test()], capture_output=True, text=True, cwd=self.tmp,
                             env=dict(self.env, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1"))
        self.assertTrue(bug.returncode != 0 and "FAILED" in bug.stderr,
                        f"test_repro.py fails under the planted lowering: {bug.stderr[-300:]}")


class DynamicOnlyBug(SweepCase):
    """The bug only a dynamic compile has, swept from Python (pt2diff.sweep_sizes, in setUpClass): the static compile
    at one size passes."""

    CODE = ("import json, sys, pt2diff\n"
            "s = pt2diff.sweep_sizes(sys.argv[1], dims={'s77': [2, 3, 17]}, compiled=sys.argv[2], device=sys.argv[3],"
            " localize=False)\n"
            "print(json.dumps({'failing': s.failing_sizes(), 'nodes': [p.node for p in s.points],"
            " 'check': s.static_check.summary, 'differ': s.static_check.differ,"
            " 'levels': [s.static_check.static_level, s.static_check.dynamic_level]}))\n")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        env, compiled = planted("dynamic")
        cls.process = subprocess.run([sys.executable, "-c", cls.CODE, os.path.join(cls.fixtures, "dynamic_batch.pt2"), compiled,
                                      cls.device], capture_output=True, text=True, env=env)

    def swept(self):
        """What the sweep found, after checking that pt2diff.sweep_sizes ran."""
        q = self.process
        got = json.loads(q.stdout.strip().splitlines()[-1]) if q.returncode == 0 and q.stdout.strip() else None
        self.assertIsNotNone(got, f"pt2diff.sweep_sizes ran ({q.returncode}): {q.stderr[-300:]}")
        return got

    def test_every_size_fails_at_sigmoid(self):
        """Sizes 2 and 3 fail, and sigmoid stands out at every size swept (2, 3 and 17)."""
        got = self.swept()
        self.assertTrue(got["failing"] == [2, 3] and got["nodes"] == ["sigmoid"] * 3,
                        f"the dynamic-only bug: sizes 2 and 3 fail, sigmoid stands out at every size: {got}")

    def test_the_static_check_names_the_dynamic_compile(self):
        got = self.swept()
        self.assertTrue(got["differ"] and got["levels"] == ["pass", "fail"] and "--static avoids it" in got["check"],
                        f"static against dynamic names the dynamic compile: {got['check']}")


class CleanDynamicGraphs(SweepCase):
    """Clean dynamic graphs agree at every default size; one `pt2diff sizes` run each, in setUpClass."""

    SYMBOLS = {"decoder_seq": "x.size(1)", "conv_batch": "x.size(0)"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {name: cls.run_sizes(name) for name in cls.SYMBOLS}

    @classmethod
    def run_sizes(cls, name):
        """`pt2diff sizes` on fixtures/dynamic/NAME.pt2 at its default sizes: (the process, the sweep or None)."""
        path = os.path.join(cls.tmp, name + ".json")
        p = subprocess.run([cls.cli, "sizes", os.path.join(cls.fixtures, "dynamic", name + ".pt2"),
                            os.path.join(cls.fixtures, "dynamic", name + "_inputs.pt"), "--device", cls.device, "--json", path],
                           capture_output=True, text=True)
        return p, (json.load(open(path)) if os.path.exists(path) else None)

    def check_graph(self, name):
        symbol = self.SYMBOLS[name]
        p, s = self.runs[name]
        self.assertTrue(p.returncode == 0 and s is not None,
                        f"{name}: every size agrees ({p.returncode}): {p.stdout[-400:]} {p.stderr[-200:]}")
        self.assertValidSweep(s)
        levels = {q["size"]: q["level"] for q in s["points"]}
        self.assertTrue(len(levels) >= 10 and set(levels.values()) == {"pass"}, f"{name}: {levels}")
        shapes = s["shapes"] or {}
        self.assertTrue(shapes.get("mode") == "dynamic" and any(d["input"] == symbol for d in shapes.get("symbols", [])),
                        f"{name}: compiled dynamic in {symbol}: {shapes.get('mode')} {shapes.get('why_static')}")
        kept_max = next((d["max"] for d in shapes.get("symbols", []) if d["input"] == symbol), None)
        past = [q for q in s["points"] if kept_max is not None and q["size"] > kept_max]
        self.assertTrue(all(q["recompiles"] > 0 for q in past) and (not shapes.get("note") or past),
                        f"{name}: sizes past the range the compile kept ({kept_max}) recompile, and only they: "
                        f"{[(q['size'], q['recompiles']) for q in s['points'] if q['recompiles']]}")

    def test_decoder_seq(self):
        """A decoder block, sequence length dynamic: every default size agrees, compiled dynamic in x.size(1)."""
        self.check_graph("decoder_seq")

    def test_conv_batch(self):
        """A conv net, batch dynamic: every default size agrees, compiled dynamic in x.size(0)."""
        self.check_graph("conv_batch")


if __name__ == "__main__":
    unittest.main()
