"""Graphs that write in place, through the real Inductor (fixtures/mutation, fixtures/make_mutation_fixtures.py).
A ctest, label inductor (tests/cli_case.py says how to run it alone).

- scatter_into_input with the stock Inductor: a real bug of torch's (2.13 on the CPU; the report says what it finds
  on others): `x.index_put_(...)` then `x.add_(x.flip(0))` leaves a wrong x. Judged as "input 'x' after the
  graph", localized to the smallest window that reproduces (index_put_ .. add_; each op alone passes), the
  aliasing hint says who writes and who reads x in between, and the lever that removes it is compiled. Where
  the bug does not reproduce (input 'x' agrees) the tests of the bug are skipped, saying so.
- kv_cache with a bug planted in Inductor's lowering of index_put_ (the scatter it reinplaces into the cache):
  "buffer 'k_cache' after the graph" fails, localized to index_copy_.
- view_write with a bug planted in Inductor's lowering of copy_ (what it writes back into the input): localized
  to copy_, the write through a view.
- Clean: kv_cache, bn_train (train-mode batch norm: running statistics) and view_write agree with the stock Inductor.
Every report is valid against docs/report.schema.json; the HTML report names the written input.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402
BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")


class MutationCase(CliTestCase):
    """What the classes share: a pt2diff run of fixtures/mutation/NAME.pt2 with its JSON and HTML reports."""

    @classmethod
    def run_graph(cls, name, *flags, plant=None):
        """(the process, the report or None, the HTML report's text); with the stock Inductor, or with the planted
        bug PLANT = (op, the argument it corrupts)."""
        report, html = os.path.join(cls.tmp, name + ".json"), os.path.join(cls.tmp, name + ".html")
        env = dict(os.environ)
        compiled = ["--compiled", "inductor"]
        if plant:
            op, arg = plant
            env.update(PT2DIFF_PLANT_OP=op, PT2DIFF_PLANT_ARG=str(arg), PT2DIFF_PLANT_ERROR="0.05")
            compiled = ["--compiled", f"external:{sys.executable} {BUG_WORKER}"]
        p = subprocess.run([cls.cli, os.path.join(cls.fixtures, "mutation", name + ".pt2"),
                            os.path.join(cls.fixtures, "mutation", name + "_inputs.pt"), "--json", report, "--html", html,
                            "--device", cls.device, *compiled, *flags], capture_output=True, text=True, env=env)
        r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
        return p, r, (open(html).read() if os.path.exists(html) else "")


def output(r, name):
    return next((o for o in r["outputs"] if o["name"] == name), None)


def hint(r, kind):
    loc = r.get("localization") or {}
    return next((h for h in loc.get("hints", []) if h["kind"] == kind), None)


class StockInductorScatterBug(MutationCase):
    """The real bug, with the stock Inductor: scatter_into_input, its culprit window written out by --repro."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.repro = os.path.join(cls.tmp, "scatter_repro")
        cls.process, cls.report, cls.html = cls.run_graph("scatter_into_input", "--repro", cls.repro)

    def ran(self):
        """The report, after checking that there is one."""
        p = self.process
        self.assertIsNotNone(self.report, f"scatter_into_input ran ({p.returncode}): {p.stderr.strip()[-300:]}")
        return self.report

    def reproduces(self):
        """The report where input 'x' fails (the bug reproduces on this torch); else the test is skipped."""
        x = output(self.ran(), "input 'x' after the graph")
        if x is None or x["pass"]:
            self.skipTest("the stock Inductor's bug does not reproduce on this torch: input 'x' agrees")
        return self.report

    def test_report_is_valid(self):
        self.assertValidReport(self.ran())

    def test_the_written_input_is_a_result(self):
        x = output(self.ran(), "input 'x' after the graph")
        self.assertTrue(x is not None and x.get("value") == "x" and x["role"] == "user_input_mutation of x",
                        "the written input is a result: input 'x' after the graph")

    def test_the_smallest_window_is_named(self):
        culprit = self.reproduces()["localization"]["culprit"]
        self.assertTrue(culprit["kind"] == "window" and culprit["nodes"] == ["index_put_", "flip", "add_"],
                        f"the smallest window that reproduces is named: {culprit['kind']} {culprit['nodes']}")

    def test_aliasing_hint(self):
        """The aliasing hint says who writes x and who reads it after the write."""
        a = hint(self.reproduces(), "aliasing")
        self.assertTrue(a is not None and a["finding"] == "read_after_write"
                        and "which flip reads after the write" in a["summary"],
                        f"the aliasing hint: {a and a['finding']}: {a and a['summary'][:160]}")

    def test_a_lever_removes_it(self):
        lever = hint(self.reproduces(), "compiler_lever")
        self.assertTrue(lever is not None and lever["finding"] == "lever_removes_divergence",
                        f"a lever compiled on the window removes it: {lever and lever['summary'][:120]}")

    def test_html_names_the_written_input(self):
        self.reproduces()
        self.assertTrue("input &#39;x&#39; after the graph" in self.html or "input 'x' after the graph" in self.html,
                        "the HTML report names the written input")

    def repro_test(self):
        """The path of test_repro.py, the fused window as a PyTorch unit test, after checking that --repro wrote it."""
        r = self.reproduces()
        test = os.path.join(self.repro, "test_repro.py")
        self.assertTrue(os.path.exists(test), f"test_repro.py written for the window: {r['localization'].get('repro')}")
        return test

    def test_repro_fails_under_the_stock_inductor(self):
        q = subprocess.run([sys.executable, self.repro_test()], capture_output=True, text=True, cwd=self.tmp)
        self.assertTrue(q.returncode != 0 and "FAILED" in q.stderr,
                        f"test_repro.py fails under the stock Inductor: {q.returncode} {q.stderr[-300:]}")

    def test_repro_passes_with_the_lever(self):
        """test_repro.py passes with the lever that removes the bug (max_fusion_size=1), set before the test runs."""
        lever = ("import runpy, sys, torch._inductor.config as c; c.max_fusion_size = 1; sys.argv = [sys.argv[1]]; "
                 "runpy.run_path(sys.argv[0], run_name='__main__')")
        q = subprocess.run([sys.executable, "-c", lever, self.repro_test()], capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(q.returncode, 0,
                         f"test_repro.py passes without the bug (max_fusion_size=1): {q.returncode} {q.stderr[-300:]}")


class PlantedWriteBugs(MutationCase):
    """Planted: the reinplaced scatter, then the write-back; one run each (--no-exploded), in setUpClass."""

    # name -> the planted (op, argument), the result that fails, the culprit node, the aliasing hint's finding
    CASES = {"kv_cache": (("index_put_", 2), "buffer 'k_cache' after the graph", "index_copy_", "scatter_written_back"),
             "view_write": (("copy_", 1), "input 'x' after the graph", "copy_", "write_through_view")}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {name: cls.run_graph(name, "--no-exploded", plant=plant) for name, (plant, _, _, _) in cls.CASES.items()}

    def check_case(self, name):
        plant, result, node, finding = self.CASES[name]
        p, r, _ = self.runs[name]
        self.assertTrue(r is not None and p.returncode == 1,
                        f"{name} with {plant[0]} planted fails ({p.returncode}): {p.stderr.strip()[-300:]}")
        self.assertValidReport(r)
        o = output(r, result)
        self.assertTrue(o is not None and not o["pass"], f"{name}: {result} fails")
        culprit = r["localization"]["culprit"]
        self.assertTrue(culprit["kind"] == "single_op" and culprit["nodes"] == [node],
                        f"{name}: localized to {node}: {culprit['kind']} {culprit['nodes']}")
        a = hint(r, "aliasing")
        self.assertTrue(a is not None and a["finding"] == finding, f"{name}: aliasing hint {finding}: {a and a['finding']}")

    def test_kv_cache_reinplaced_scatter(self):
        """index_put_ planted: buffer 'k_cache' after the graph fails, localized to index_copy_, scatter_written_back."""
        self.check_case("kv_cache")

    def test_view_write_write_back(self):
        """copy_ planted: input 'x' after the graph fails, localized to copy_, write_through_view."""
        self.check_case("view_write")


class CleanMutatingGraphs(MutationCase):
    """Clean mutating graphs agree with the stock Inductor (--no-kernel-map); one run each, in setUpClass."""

    NAMES = ("kv_cache", "bn_train", "view_write")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {name: cls.run_graph(name, "--no-kernel-map") for name in cls.NAMES}

    def test_they_agree(self):
        """Each agrees with the stock Inductor and has written results."""
        for name in self.NAMES:
            with self.subTest(name):
                p, r, _ = self.runs[name]
                written = [o["name"] for o in (r or {}).get("outputs", []) if o.get("value")]
                self.assertTrue(p.returncode == 0 and r is not None and r["verdict"] == "agree" and written,
                                f"{name} agrees with the stock Inductor, written results {written} "
                                f"({p.returncode} {p.stderr.strip()[-200:]})")

    def test_reports_are_valid(self):
        for name in self.NAMES:
            with self.subTest(name):
                _, r, _ = self.runs[name]
                if r is not None:  # no report is test_they_agree's failure
                    self.assertValidReport(r)


if __name__ == "__main__":
    unittest.main()
