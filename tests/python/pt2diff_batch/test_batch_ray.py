"""`pt2diff batch --ray` on a local Ray instance started here (2 CPUs) gives the summary of the local run. A ctest,
labels batch, ray and slow (tests/cli_case.py says how to run it alone); skipped when ray is not installed in this
Python.

13 fixture cases (eager, planted faults, an unsupported op, two through Inductor) run with `--jobs 2`, then
as Ray tasks reading the paths, then as Ray tasks with the files shipped through the object store: the
three summaries are equal but for the fields that legitimately differ (timings, executor:
pt2diff_batch.summary.comparable). One Ray start for the whole file, and one Inductor cache for the three runs'
Inductor cases (the first run compiles, the others reuse).
"""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402
from batch_support import batch, comparable, inputs_of, ray_temp_dir, read_json  # noqa: E402

try:
    import ray
except ImportError:
    ray = None

CASES = [
    ("mlp", "--compiled eager"), ("attention", "--compiled eager"), ("bf16_block", "--compiled eager"),
    ("cond", "--compiled eager"), ("conv_bn_relu", "--compiled eager"), ("ln_softmax_gelu", "--compiled eager"),
    ("multi_output_core", "--compiled eager"), ("loop_map", "--compiled eager"),
    ("attention_core", "--compiled fault:aten.bmm#2:bf16"), ("mlp", "--compiled fault:linear:scale"),
    ("python_only_ops", "--compiled eager"), ("mlp_core", "--compiled inductor --no-exploded"),
    ("ln_softmax_gelu", "--compiled inductor --no-exploded"),
]
RAY_RUNS = (("ray", []), ("ray --ray-ship", ["--ray-ship"]))


class RayMatchesLocal(CliTestCase):
    """The local run, then the two Ray runs (paths, shipped files) on one Ray instance, in setUpClass."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if ray is None:
            raise unittest.SkipTest(f"ray is not installed in {sys.executable} (scripts/test.sh installs it)")
        tmp = cls.tmp
        manifest = os.path.join(tmp, "fixtures.tsv")
        with open(manifest, "w") as f:
            for name, options in CASES:
                # The Inductor cases of the three runs share one Inductor cache: the local run compiles them, the
                # Ray runs reuse those compiles (their rows are compared without timings).
                if "inductor" in options:
                    options += f" --inductor-cache {os.path.join(tmp, 'inductor-cache')}"
                f.write(f"{os.path.join(cls.fixtures, name + '.pt2')}\t{inputs_of(cls.fixtures, name)}\t{options}\n")
        cls.local = batch(cls.cli, manifest, "--out", os.path.join(tmp, "local"), "--jobs", "2")
        cls.local_doc = read_json(os.path.join(tmp, "local", "summary.json"))

        ray_tmp = ray_temp_dir()
        cls.addClassCleanup(shutil.rmtree, ray_tmp, True)
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=ray_tmp, log_to_driver=False)
        cls.addClassCleanup(ray.shutdown)
        address = ray.get_runtime_context().gcs_address
        cls.runs = {}
        for what, extra in RAY_RUNS:
            out = os.path.join(tmp, "out-" + what.replace(" ", ""))
            run = batch(cls.cli, manifest, "--out", out, "--ray", address, *extra)
            cls.runs[what] = (run, out, read_json(os.path.join(out, "summary.json")))

    def test_local_run_finishes(self):
        local = self.local
        self.assertEqual(local.returncode, 1,
                         f"the local run finishes (exit 1: planted faults) ({local.returncode}; {local.stderr.strip()[-300:]})")

    def test_ray_runs_finish(self):
        for what, (run, _, _) in self.runs.items():
            with self.subTest(what):
                self.assertEqual(run.returncode, 1, f"{what}: finishes, exit 1 ({run.returncode}; {run.stderr.strip()[-300:]})")

    def test_ray_summaries_match_the_schema(self):
        for what, (_, _, doc) in self.runs.items():
            with self.subTest(what):
                self.assertValidReport(doc, "batch-summary")
                self.assertEqual(doc["executor"], "ray", f"{what}: the summary matches the schema")

    def test_ray_summaries_equal_the_local_one(self):
        """Each Ray run's summary equals the local run's but for timings."""
        local = comparable(self.local_doc)
        for what, (_, _, doc) in self.runs.items():
            with self.subTest(what):
                differs = [{k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
                           for a, b in zip(comparable(doc)["cases"], local["cases"]) if a != b]
                self.assertTrue(comparable(doc) == local,
                                f"{what}: the summary equals the local run's but for timings ({len(doc['cases'])} cases); "
                                f"differs: {differs}")

    def test_reports_came_back(self):
        for what, (_, out, doc) in self.runs.items():
            with self.subTest(what):
                self.assertTrue(all(r["failure"] or os.path.isfile(os.path.join(out, r["report_html"])) for r in doc["cases"]),
                                f"{what}: every diagnosed case's reports came back to DIR")

    def test_corpus_verdicts(self):
        """The corpus: 2 diverge, 1 bad input, the rest agree."""
        verdicts = [(r["verdict"], r["failure"]) for r in self.local_doc["cases"]]
        self.assertTrue(len(CASES) >= 10 and verdicts.count(("diverged", None)) == 2 and verdicts.count((None, "bad_input")) == 1
                        and verdicts.count(("agree", None)) == len(CASES) - 3,
                        f"the corpus: 2 diverge, 1 bad input, the rest agree ({verdicts})")


if __name__ == "__main__":
    unittest.main()
