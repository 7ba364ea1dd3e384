"""`pt2diff recheck` over real torch installations (docs/upstream.md). A ctest, labels inductor and torch2 (not quick;
tests/cli_case.py says how to run it alone).

The second torch: $PT2DIFF_SECOND_TORCH (the Python of any torch 2.11-2.14 other than the build's), else
torch 2.14.1 from the package registry into a cached venv (scripts/torch_venv.sh: 69 s cold on the 2-core machine,
then 3 s). Beside the build's torch (2.13) it plays the good release; the bad one is the build's torch with a bug
planted in Inductor's lowering of sigmoid (double_site/sitecustomize.py: a wrapper Python, as a release with that
lowering bug would be). Bad installations are real or doubles: a Python without torch (a venv of the base
interpreter), a torch reporting 2.9.1, a torch whose torch.export.load refuses the archive.

- The table on fixtures/dynamic_batch.pt2: the two stock torches pass, the planted one fails with sigmoid named, its
  compiled local error at the culprit over 100x eager's; every bad installation is one row and one stderr line, the
  other torches still run (exit 2); the regression between the good and the bad torch names sigmoid, the one node whose
  compiled local error changed, and the first diverging op; JSON valid against docs/recheck.schema.json.
- The culprit's repro directory, rechecked with --bisect-versions over [2.13, second, planted]: the first bad torch is
  the planted one; its test_repro.py passes under the second torch (a plain-PyTorch unit test on another release) and
  fails under the planted one; the repro's compiler artifacts (Inductor's debug trace of the window) come from the
  compiler under test: its output_code.py holds the planted scale.
PT2DIFF_TEST_DEVICE=cuda runs it all on the GPU (scripts/gpu_test.sh part 9, the second torch being the build's own).
- A batch summary with an agreeing and a diverging case: only the diverging one is rechecked.
- pt2diff.recheck from Python, bisecting over the build's torch and the planted one.
"""
import json
import os
import stat
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402


def second_torch():
    """The Python of the second torch, and how long getting it took."""
    t0 = time.monotonic()
    given = os.environ.get("PT2DIFF_SECOND_TORCH")
    if given:
        return given, 0.0
    p = subprocess.run([os.path.join(ROOT, "scripts", "torch_venv.sh"), "2.14.1"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"cannot install the second torch (scripts/torch_venv.sh 2.14.1): {p.stderr[-600:]}\n"
                             "set PT2DIFF_SECOND_TORCH to the Python of a torch 2.11-2.14 other than the build's")
    return p.stdout.strip().splitlines()[-1], time.monotonic() - t0


def wrapper(folder, name, base, **env):
    """An executable standing in for a Python: `base` with double_site first on its path and `env` set."""
    path = os.path.join(folder, name)
    lines = ["#!/bin/sh", f"export PYTHONPATH='{os.path.join(HERE, 'double_site')}'${{PYTHONPATH:+:$PYTHONPATH}}"]
    lines += [f"export {k}='{v}'" for k, v in env.items()]
    lines.append(f"exec '{base}' \"$@\"")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def torch_of(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()


def read_json(path, default=None):
    return json.load(open(path)) if os.path.exists(path) else default


class RecheckTorches(CliTestCase):
    """The second torch, the doubles and every pt2diff run (the table, the repro under the planted torch, its
    bisection, the batch summary's recheck) in setUpClass; each test checks one thing of them."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.second, install_seconds = second_torch()
        cls.version, cls.own = torch_of(cls.second), torch_of(sys.executable)
        print(f"second torch: {cls.version} at {cls.second} ({install_seconds:.1f} s to get it); the build's: {cls.own}; "
              f"device {cls.device}")
        cls.graph = os.path.join(cls.fixtures, "dynamic_batch.pt2")
        cls.inputs = os.path.join(cls.fixtures, "dynamic_batch_inputs.pt")
        tmp = cls.tmp
        cls.planted = wrapper(tmp, "planted", sys.executable, PT2DIFF_TORCH_DOUBLE="planted", PT2DIFF_PLANT_OP="sigmoid",
                              PT2DIFF_PLANT_ERROR="0.01")
        old = wrapper(tmp, "old", sys.executable, PT2DIFF_TORCH_DOUBLE="old", PT2DIFF_DOUBLE_VERSION="2.9.1")
        refuses = wrapper(tmp, "refuses", cls.second, PT2DIFF_TORCH_DOUBLE="load_error")
        base = os.path.join(sys.base_prefix, "bin", "python3")
        subprocess.run([base, "-m", "venv", "--without-pip", os.path.join(tmp, "notorch")], check=True)
        notorch = os.path.join(tmp, "notorch", "bin", "python")
        here = "build=" + sys.executable
        device = ["--device", cls.device]

        # 1. The table: two good torches, a bad one, three that cannot judge.
        path = os.path.join(tmp, "recheck.json")
        torches = [here, cls.second, "planted=" + cls.planted, "none=" + notorch, "old=" + old, "refuses=" + refuses]
        cls.table_run = subprocess.run([cls.cli, "recheck", cls.graph, cls.inputs, *(a for t in torches for a in ("--torch", t)),
                                        "--json", path] + device, capture_output=True, text=True)
        print(cls.table_run.stdout)
        cls.table = read_json(path)

        # 2. The culprit's repro directory, written under the planted torch, then bisected over three releases in order.
        cls.repro = os.path.join(tmp, "repro")
        path = os.path.join(tmp, "planted.json")
        cls.repro_run = subprocess.run([cls.cli, cls.graph, cls.inputs, "--worker-python", cls.planted, "--repro", cls.repro,
                                        "--json", path] + device, capture_output=True, text=True)
        cls.repro_report = read_json(path, {})
        path = os.path.join(tmp, "bisect.json")
        cls.bisect_run = subprocess.run([cls.cli, "recheck", cls.repro, "--torch", here, "--torch", cls.second,
                                         "--torch", "planted=" + cls.planted, "--bisect-versions", "--json", path] + device,
                                        capture_output=True, text=True)
        print(cls.bisect_run.stdout)
        cls.bisect = read_json(path, {"cases": [{}]})["cases"][0]

        # 3. A batch summary: only the case that did not agree is rechecked.
        summary = os.path.join(tmp, "summary.json")
        json.dump({"format": "pt2diff-batch summary 1", "cases": [
            {"case": "clean", "graph": os.path.join(cls.fixtures, "mlp.pt2"),
             "inputs": os.path.join(cls.fixtures, "mlp_inputs.pt"), "verdict": "agree", "level": "pass"},
            {"case": "bug", "graph": "repro/repro.pt2", "inputs": "repro/repro_inputs.pt", "verdict": "diverged",
             "level": "fail"}]}, open(summary, "w"))
        path = os.path.join(tmp, "summary_recheck.json")
        cls.summary_run = subprocess.run([cls.cli, "recheck", summary, "--torch", cls.second, "--json", path] + device,
                                         capture_output=True, text=True)
        cls.summary = read_json(path, {"cases": []})

    def table_case(self):
        """The table's one case (the run wrote its JSON)."""
        self.assertIsNotNone(self.table, f"no JSON written: exit {self.table_run.returncode} {self.table_run.stderr[-600:]}")
        return self.table["cases"][0]

    def rows(self):
        """The table's rows by label (the version where a row has no label)."""
        return {r["label"] or r["version"]: r for r in self.table_case()["rows"]}

    # 1. The table.
    def test_table_exit_code(self):
        """Exit 2: torches that cannot judge, the others still run and the JSON written."""
        p = self.table_run
        self.assertTrue(p.returncode == 2 and self.table is not None,
                        f"exit 2 (torches that cannot judge) with the JSON written: {p.returncode} {p.stderr[-600:]}")

    def test_table_is_valid(self):
        self.table_case()
        self.assertValidReport(self.table, "recheck")

    def test_table_levels(self):
        """The two stock torches pass, the planted one fails, the three bad installations are unusable."""
        levels = [r["level"] for r in self.table_case()["rows"]]
        self.assertEqual(levels, ["pass", "pass", "fail", "unusable", "unusable", "unusable"], f"levels in order: {levels}")

    def test_table_versions(self):
        rows = self.table_case()["rows"]
        self.assertTrue(rows[1]["version"] == self.version and rows[0]["version"] == self.own,
                        f"versions read: {[r['version'] for r in rows]}")

    def test_table_planted_names_sigmoid(self):
        """The planted torch's row names sigmoid, its compiled local error there over 100x eager's."""
        bad = self.rows().get("planted", {})
        self.assertTrue(bad.get("culprit") == "sigmoid" and bad.get("culprit_op") == "aten.sigmoid.default"
                        and bad.get("culprit_ratio", 0) > 100,
                        f"planted: sigmoid named, compiled local error at it over 100x eager's: {bad.get('culprit')} "
                        f"{bad.get('culprit_ratio')}")

    def test_table_bad_installations_say_why(self):
        """Each bad installation's row says what is wrong with it."""
        by = self.rows()
        problem = {label: by.get(label, {}).get("problem", "") for label in ("none", "old", "refuses")}
        with self.subTest("none"):
            self.assertIn("cannot import torch", problem["none"], f"no torch: {by.get('none', {}).get('problem')}")
        with self.subTest("old"):
            self.assertTrue("2.9.1" in problem["old"] and "2.11 to 2.14" in problem["old"],
                            f"old: {by.get('old', {}).get('problem')}")
        with self.subTest("refuses"):
            self.assertIn("schema version", problem["refuses"], f"archive refused: {by.get('refuses', {}).get('problem')}")

    def test_table_one_stderr_line_per_bad_installation(self):
        lines = [line for line in self.table_run.stderr.splitlines() if line.startswith("pt2diff: ")]
        self.assertTrue(len(lines) == 3 and all(line.split(":")[1].strip() in ("none", "old", "refuses") for line in lines),
                        f"one stderr line each: {lines}")

    def regression(self):
        """The table's one regression, second -> planted."""
        regressions = self.table_case()["regressions"]
        self.assertTrue(len(regressions) == 1 and regressions[0]["good"] == 1 and regressions[0]["bad"] == 2
                        and not regressions[0]["fixed"],
                        f"one regression, second -> planted: {[(g['good'], g['bad'], g['fixed']) for g in regressions]}")
        return regressions[0]

    def test_table_regression(self):
        """One regression, from the second torch to the planted one."""
        self.regression()

    def test_table_regression_changed_sigmoid_alone(self):
        """The one node whose compiled local error changed (over 100x) is sigmoid."""
        g = self.regression()
        self.assertTrue([c["node"] for c in g["changed"]] == ["sigmoid"] and g["changed"][0]["factor"] > 100,
                        f"the changed node is sigmoid alone: {[(c['node'], c['factor']) for c in g['changed']]}")

    def test_table_regression_first_diverging_op(self):
        g = self.regression()
        self.assertTrue(g["first_diverging"].startswith("sigmoid (aten.sigmoid.default) at "),
                        f"first diverging op: {g['first_diverging']}")

    # 2. The repro directory and its bisection.
    def test_repro_written(self):
        """The graph fails under the planted torch and --repro writes its directory."""
        p = self.repro_run
        self.assertTrue(p.returncode == 1 and os.path.exists(os.path.join(self.repro, "repro.pt2")),
                        f"repro written under the planted torch: {p.returncode} {p.stderr[-300:]}")

    def test_repro_report_is_valid(self):
        self.assertValidReport(self.repro_report)

    def test_repro_compiler_artifacts(self):
        """The compiler's own files for the window come from the compiler under test: the planted scale is in its code
        (on the CPU; a CPU export diffed on the GPU has none: its window's compile is not the one that went wrong)."""
        written = (self.repro_report.get("localization") or {}).get("repro") or {}
        made = {a["what"]: a["path"] for a in written.get("artifacts") or []}
        if self.device == "cpu":
            self.assertTrue({"post_grad_graph", "output_code", "ir_post_fusion"} <= set(made),
                            f"the compiler's artifacts listed: {sorted(made)}")
            code = open(made["output_code"]).read() if "output_code" in made else ""
            graph_code = open(made["post_grad_graph"]).read() if "post_grad_graph" in made else ""
            self.assertTrue("1.01" in code and "sigmoid" in graph_code,
                            f"output_code.py holds the planted lowering (x 1.01), the post-grad graph the sigmoid: {len(code)} "
                            f"{len(graph_code)} chars")
        else:
            self.assertTrue(not made and "export the model on" in written.get("artifacts_message", ""),
                            f"no artifacts from a CPU compile of the window: {written.get('artifacts_message')}")

    def test_bisect_first_bad_is_the_planted_torch(self):
        b = self.bisect.get("bisection") or {}
        self.assertTrue(self.bisect_run.returncode == 1 and b.get("first_bad") == 2 and b.get("runs") == 3,
                        f"first bad torch: the planted one, 3 runs: {self.bisect_run.returncode} {b}")

    def test_bisect_reads_the_repro(self):
        """The bisection's case is the repro's archive and inputs."""
        case = self.bisect
        self.assertTrue(case.get("graph", "").endswith("repro.pt2") and case.get("inputs", "").endswith("repro_inputs.pt"),
                        f"the repro's archive and inputs: {case.get('graph')} {case.get('inputs')}")

    def repro_test(self):
        test = os.path.join(self.repro, "test_repro.py")
        self.assertTrue(os.path.exists(test),
                        f"test_repro.py written: {sorted(os.listdir(self.repro)) if os.path.isdir(self.repro) else None}")
        return test

    def test_repro_test_passes_under_the_second_torch(self):
        p = subprocess.run([self.second, self.repro_test()], capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, f"test_repro.py passes under torch {self.version}: {p.stderr[-400:]}")

    def test_repro_test_fails_under_the_planted_torch(self):
        p = subprocess.run([self.planted, self.repro_test()], capture_output=True, text=True, cwd=self.tmp)
        self.assertTrue(p.returncode != 0 and "FAILED" in p.stderr,
                        f"test_repro.py fails under the planted torch: {p.returncode} {p.stderr[-300:]}")

    # 3. The batch summary.
    def test_summary_rechecks_the_diverged_case_alone(self):
        """Of a batch summary's cases only the one that did not agree is rechecked, and passes under the second torch."""
        p, cases = self.summary_run, self.summary["cases"]
        self.assertTrue(p.returncode == 0 and [c["graph"] for c in cases] == [os.path.join(self.tmp, "repro", "repro.pt2")]
                        and cases[0]["rows"][0]["level"] == "pass",
                        f"the diverged case alone, passing under torch {self.version}: {p.returncode} "
                        f"{[c['graph'] for c in cases]} {p.stderr[-300:]}")

    # 4. From Python.
    def test_pt2diff_recheck_from_python(self):
        """pt2diff.recheck, bisecting over the build's torch and the planted one, names the planted torch and sigmoid;
        its JSON is valid."""
        import pt2diff as pd
        import torch
        r = pd.recheck(self.graph, torch.load(self.inputs, weights_only=True),
                       torches={"build": sys.executable, "planted": self.planted}, bisect=True, device=self.device)
        bad = r.first_bad()
        self.assertTrue(bad is not None and bad.label == "planted" and bad.culprit == "sigmoid" and r.bisection.runs == 2
                        and "first bad torch: planted" in r.to_text(),
                        f"pt2diff.recheck names the planted torch and sigmoid: {bad and bad.label} {bad and bad.culprit} "
                        f"{r.bisection}")
        self.assertValidReport(json.loads(r.to_json()), "recheck")


if __name__ == "__main__":
    unittest.main()
