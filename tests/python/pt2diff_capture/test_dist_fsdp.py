"""`pt2diff dist` on an FSDP-style step (tests/python/pt2diff_capture/ranks/fsdp_step.py): the forward all-gathers each
weight's shards, the backward reduce-scatters their gradients, each rank feeds its own batch. On 2 and 4 gloo ranks
the clean step agrees: the simulated all_gather (concatenation in rank order) and reduce_scatter (a fold in rank
order, then the rank's chunk) are what gloo computes, and on 4 ranks gloo's fold order, which is not the reference's,
is order within eager's own error, not a bug. An all_gather whose chunks land one rank off (a bug planted in Inductor's
wait lowering, tests/engine/dist/collective_bug_worker.py) is named at the first all_gather as an offset. With
Inductor's all_gather bucketing on (a communication pass: `bucket_all_gathers_fx`), the clean step agrees, and a bucket
split at the wrong offsets (planted in the pass) is named as the pass, verified by a compile of every rank without it.
On 4 ranks, all_gathers doubled on rank 3 alone are named at the collective and as a rank that diverged alone.
Extended tier (scripts/test.sh --extended): two captures and five dist runs, about a minute and a half.
"""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "..", "python"))
COLLECTIVE_BUG_WORKER = os.path.normpath(os.path.join(HERE, "..", "..", "engine", "dist", "collective_bug_worker.py"))


class FsdpStyle(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.out = {}
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
        for n in (2, 4):
            out = os.path.join(cls.tmp, f"captured_{n}")
            p = subprocess.run([sys.executable, "-m", "pt2diff_capture", "ranks", "--nproc", str(n),
                                os.path.join(HERE, "ranks", "fsdp_step.py"), out],
                               capture_output=True, text=True, env=env, timeout=600)
            if p.returncode != 0:
                raise AssertionError(f"capture on {n} ranks failed: {p.stderr[-3000:]}")
            cls.out[n] = out

    def dist(self, n, *args, env=None):
        report = os.path.join(self.tmp, f"report_{n}_{len(os.listdir(self.tmp))}.json")
        p = subprocess.run([self.cli, "dist", self.out[n], "--json", report, *args], capture_output=True, text=True,
                           timeout=900, env=dict(os.environ, **(env or {})))
        self.assertIn(p.returncode, (0, 1), p.stdout[-3000:] + p.stderr[-2000:])
        with open(report) as f:
            return p, json.load(f)

    def test_clean_step_agrees_on_2_ranks_with_rank_local_diffs(self):
        p, r = self.dist(2)
        self.assertEqual((p.returncode, r["culprits"]), (0, []), p.stdout[-4000:])
        forward, backward = r["graphs"]
        self.assertEqual([c["op"] for c in forward["collectives"]], ["all_gather_into_tensor"] * 2)
        self.assertEqual([c["op"] for c in backward["collectives"]], ["reduce_scatter_tensor"] * 2)
        for g in r["graphs"]:
            for rank in g["ranks"]:
                self.assertEqual(rank["rank_local"]["level"], "pass", (g["graph"], rank["rank"]))

    def test_clean_step_agrees_on_4_ranks_whatever_order_gloo_folds_in(self):
        p, r = self.dist(4, "--no-rank-local")
        self.assertEqual((p.returncode, r["culprits"]), (0, []), p.stdout[-4000:])
        self.assertEqual([len(g["ranks"]) for g in r["graphs"]], [4, 4])
        # The gathered weights are the same on every rank, in the reference and compiled.
        self.assertTrue(all(a["equal"] for g in r["graphs"] for a in g["across"]), r["graphs"][0]["across"])

    def test_an_all_gather_one_rank_off_is_named_as_an_offset(self):
        p, r = self.dist(2, "--graph", "0", "--no-rank-local", "--compiled",
                         f"external:{sys.executable} {COLLECTIVE_BUG_WORKER}", env={"PT2DIFF_PLANT_COLLECTIVE": "offset"})
        self.assertEqual(p.returncode, 1, p.stdout[-3000:])
        self.assertEqual([(c["kind"], c["collective_kind"], c["nodes"]) for c in r["culprits"]],
                         [("collective", "offset", ["all_gather_into_tensor"])], p.stdout[-3000:])
        self.assertIn("holds rank position", r["culprits"][0]["summary"])

    def test_a_bucketing_pass_splitting_at_the_wrong_offset_is_named_as_the_pass(self):
        bucketing = ["--graph", "0", "--no-rank-local", "--inductor-config", "bucket_all_gathers_fx='all'"]
        p, r = self.dist(2, *bucketing)
        self.assertEqual((p.returncode, r["culprits"]), (0, []), p.stdout[-3000:])
        p, r = self.dist(2, *bucketing, "--compiled", f"external:{sys.executable} {COLLECTIVE_BUG_WORKER}",
                         env={"PT2DIFF_PLANT_COLLECTIVE": "bucket_offset"})
        self.assertEqual(p.returncode, 1, p.stdout[-3000:])
        self.assertEqual([(c["kind"], c["collective_kind"]) for c in r["culprits"]], [("communication_pass", "offset")],
                         p.stdout[-3000:])
        summary = r["culprits"][0]["summary"]
        self.assertIn("the communication pass bucket_all_gathers_fx", summary)
        self.assertIn("torch._inductor.config.bucket_all_gathers_fx = 'none'", summary)
        self.assertIn("a bucket split at the wrong offset", summary)
        self.assertEqual(r["graphs"][0]["passes_tried"], ["bucket_all_gathers_fx='none': every rank agrees"])

    def test_a_rank_whose_gathered_weights_differ_alone_is_named(self):
        p, r = self.dist(4, "--graph", "0", "--no-rank-local", "--compiled", f"external:{sys.executable} {COLLECTIVE_BUG_WORKER}",
                         env={"PT2DIFF_PLANT_COLLECTIVE": "scale", "PT2DIFF_PLANT_RANK": "3"})
        self.assertEqual(p.returncode, 1, p.stdout[-3000:])
        kinds = [(c["kind"], c["rank"]) for c in r["culprits"]]
        self.assertIn(("collective", 3), kinds, p.stdout[-3000:])  # rank 3's all_gather result is 2x, its inputs agree
        self.assertIn(("rank_alone", 3), kinds, p.stdout[-3000:])  # the gathered weights, equal on every rank, differ on rank 3
        self.assertEqual([b["rank"] for b in r["graphs"][0]["boundaries"] if b["output"] != "pass"], [3, 3])


if __name__ == "__main__":
    unittest.main()
