"""Capture under a process group (issue 71, its first part): `python -m pt2diff_capture ranks --nproc N SCRIPT OUT` runs a
script on N gloo ranks of this machine, and a capture backend under an initialized process group writes one folder
per rank, OUT/rank_R, whose index.json says the rank, the world size, the backend, the groups (name and global
ranks) and, for each graph, the collectives it issues in order (op, group, reduction). Before, every rank wrote
OUT/index.json and the graphs overwrote each other. A ctest, label capture (tests/cli_case.py).

Checked on the tensor-parallel block of tests/python/pt2diff_capture/ranks/tp_step.py, 2 ranks: each rank's
folder holds its forward and backward graphs, and the forward lists the all_reduce of the partial sums and its wait.

The same capture is then judged by `pt2diff dist` (docs/distributed.md): every rank's graphs in lockstep against one
fp64 step, the compiled ranks in a real gloo group. The clean step agrees; a lowering bug planted in Inductor's relu at
the shape only rank 1 has (its uneven shard: tests/engine/localize/planted_lowering.py) is named at relu, on rank 1,
with its source line, though the all_reduce carries its error into rank 0's compiled output too; bugs planted in
Inductor's lowering of the all_reduce (tests/engine/dist/collective_bug_worker.py) are each named at the all_reduce
as their kind: a double scaling, a collective in float16, a read before the wait; a folder without every rank, and a
collective run by the single-graph diff, are one line and exit 2.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "..", "python"))
BUG_WORKER = os.path.normpath(os.path.join(HERE, "..", "..", "engine", "localize", "lowering_bug_worker.py"))
COLLECTIVE_BUG_WORKER = os.path.normpath(os.path.join(HERE, "..", "..", "engine", "dist", "collective_bug_worker.py"))


class TwoRanks(CliTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.out = os.path.join(cls.tmp, "captured")
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cls.p = subprocess.run([sys.executable, "-m", "pt2diff_capture", "ranks", "--nproc", "2",
                                os.path.join(HERE, "ranks", "tp_step.py"), cls.out],
                               capture_output=True, text=True, env=env, timeout=600)
        cls.index = {}
        for r in (0, 1):
            path = os.path.join(cls.out, f"rank_{r}", "index.json")
            if os.path.exists(path):
                with open(path) as f:
                    cls.index[r] = json.load(f)

    def test_each_rank_writes_its_own_folder(self):
        self.assertEqual(self.p.returncode, 0, self.p.stderr[-3000:])
        self.assertEqual(sorted(os.listdir(self.out)), ["rank_0", "rank_1"])
        self.assertFalse(os.path.exists(os.path.join(self.out, "index.json")))
        for r in (0, 1):
            with self.subTest(rank=r):
                d = self.index[r]["distributed"]
                self.assertEqual((d["rank"], d["world_size"], d["backend"]), (r, 2, "gloo"))
                self.assertIn({"name": "0", "ranks": [0, 1]}, d["groups"])
                graphs = self.index[r]["graphs"]
                self.assertEqual([(g["kind"], g["status"]) for g in graphs], [("forward", "ok"), ("backward", "ok")])
                for g in graphs:
                    self.assertTrue(os.path.exists(os.path.join(self.out, f"rank_{r}", g["archive"])))

    def test_the_collectives_are_listed_in_order(self):
        forward = self.index[0]["graphs"][0]["collectives"]
        self.assertEqual([(c["op"], c["group"], c.get("reduce")) for c in forward],
                         [("all_reduce", "0", "sum"), ("wait_tensor", None, None)])
        self.assertEqual(self.index[0]["graphs"][0]["collectives"], self.index[1]["graphs"][0]["collectives"])

    def dist(self, *args, env=None):
        p = subprocess.run([self.cli, "dist", self.out, *args], capture_output=True, text=True, timeout=900,
                           env=dict(os.environ, **(env or {})))
        return p

    def test_dist_clean_step_agrees_on_every_rank(self):
        report = os.path.join(self.tmp, "clean.json")
        p = self.dist("--json", report)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:] + p.stderr[-2000:])
        self.assertIn("every rank agrees with the reference", p.stdout)
        with open(report) as f:
            r = json.load(f)
        self.assertEqual((r["world_size"], r["culprits"], r["diverged"]), (2, [], False))
        self.assertEqual([g["kind"] for g in r["graphs"]], ["forward", "backward"])
        for g in r["graphs"]:
            self.assertEqual([c["op"] for c in g["collectives"]], ["all_reduce"])
            for rank in g["ranks"]:
                with self.subTest(graph=g["graph"], rank=rank["rank"]):
                    self.assertFalse(rank["diverged"] or rank["compiled_failed"], rank)
                    self.assertEqual(rank["fed"], ["wait_tensor"])  # the rank-local program is fed the reduced sum
                    self.assertEqual(rank["rank_local"]["level"], "pass")
        forward = r["graphs"][0]
        # The reduced sum is replicated: bit-identical on both compiled ranks, as in the reference.
        self.assertIn({"output": "wait_tensor", "equal": True, "differing": [], "max_abs": 0.0}, forward["across"])
        # eager's fold in float32 is within a few float32 roundings of the exact fp64 fold.
        self.assertLess(forward["collectives"][0]["eager_max_relative"], 1e-4)

    def test_dist_names_a_rank_local_lowering_bug_at_its_op_and_rank(self):
        report = os.path.join(self.tmp, "planted.json")
        p = self.dist("--graph", "0", "--json", report, "--compiled", f"external:{sys.executable} {BUG_WORKER}",
                      env={"PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_SHAPE": "4,6"})
        self.assertEqual(p.returncode, 1, p.stdout[-4000:] + p.stderr[-2000:])
        with open(report) as f:
            r = json.load(f)
        self.assertEqual([(c["kind"], c["graph"], c["rank"], c["nodes"], c["ops"]) for c in r["culprits"]],
                         [("rank_local", 0, 1, ["relu"], ["aten.relu.default"])])
        self.assertIn("tp_step.py:", r["culprits"][0]["sources"][0])
        self.assertIn("torch.relu", r["culprits"][0]["sources"][0])
        rank0, rank1 = r["graphs"][0]["ranks"]
        # The all_reduce carries rank 1's error to rank 0's compiled output; rank 0's own program agrees.
        self.assertTrue(rank0["diverged"])
        self.assertEqual(rank0["rank_local"]["level"], "pass")
        self.assertEqual(rank1["rank_local"]["level"], "fail")
        self.assertIn("culprit (rank_local): graph 0 (forward), rank 1: relu", p.stdout)

    def test_dist_names_each_planted_collective_bug_as_its_kind(self):
        import concurrent.futures

        def run(kind):
            report = os.path.join(self.tmp, f"{kind}.json")
            p = self.dist("--graph", "0", "--no-rank-local", "--json", report,
                          "--compiled", f"external:{sys.executable} {COLLECTIVE_BUG_WORKER}",
                          env={"PT2DIFF_PLANT_COLLECTIVE": kind})
            with open(report) as f:
                return p, json.load(f)

        kinds = {"scale": 1, "precision": 0, "read_before_wait": 1}  # float16's error passes allclose: suspicious, exit 0
        with concurrent.futures.ThreadPoolExecutor(len(kinds)) as pool:
            runs = dict(zip(kinds, pool.map(run, kinds)))
        for kind, (p, r) in runs.items():
            with self.subTest(kind=kind):
                self.assertEqual(p.returncode, kinds[kind], p.stdout[-3000:] + p.stderr[-1500:])
                self.assertEqual([(c["kind"], c["collective_kind"], c["nodes"], c["graph"]) for c in r["culprits"]],
                                 [("collective", kind, ["all_reduce"], 0)], p.stdout[-3000:])
                self.assertIn("tp_step.py:", r["culprits"][0]["sources"][0])
                # What each rank gave the all_reduce agrees; what it read back does not.
                boundaries = r["graphs"][0]["boundaries"]
                self.assertEqual(sorted((b["rank"], b["input"]) for b in boundaries), [(0, "pass"), (1, "pass")])
                self.assertTrue(all(b["output"] != "pass" for b in boundaries), boundaries)
        self.assertIn("2 x the reference's", runs["scale"][1]["culprits"][0]["summary"])
        self.assertIn("rounded to float16", runs["precision"][1]["culprits"][0]["summary"])
        self.assertIn("its own input, unreduced", runs["read_before_wait"][1]["culprits"][0]["summary"])

    def test_dist_from_python(self):
        try:
            import pt2diff
        except ImportError as e:
            self.skipTest(f"the Python module is not importable here: {e}")
        r = pt2diff.diff_distributed(self.out, graphs=[1], rank_local=False, progress=False)
        self.assertTrue(r.agrees, r.to_text())
        self.assertEqual([(g.graph, g.kind, [k.rank for k in g.ranks]) for g in r.graphs], [(1, "backward", [0, 1])])
        self.assertIsNone(r.graphs[0].ranks[0].rank_local)
        self.assertIn("graph 1 (backward", r.to_text())

    def test_dist_refuses_a_folder_without_every_rank(self):
        partial = os.path.join(self.tmp, "partial")
        shutil.copytree(os.path.join(self.out, "rank_0"), os.path.join(partial, "rank_0"))
        p = subprocess.run([self.cli, "dist", partial], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("rank 1 of 2 has no folder (rank_1)", p.stderr)

    def test_a_collective_in_a_single_graph_diff_names_pt2diff_dist(self):
        graph = os.path.join(self.out, "rank_0", "graph_000.pt2")
        p = subprocess.run([self.cli, graph, graph.replace(".pt2", "_inputs.pt")], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("is a collective (all_reduce over group '0')", p.stderr)
        self.assertIn("pt2diff dist DIR", p.stderr)

    def test_a_script_that_fails_is_one_line_and_exit_two(self):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = subprocess.run([sys.executable, "-m", "pt2diff_capture", "ranks", "--nproc", "2", "/nonexistent/x.py"],
                           capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip(), "pt2diff_capture: /nonexistent/x.py: no such script")


if __name__ == "__main__":
    unittest.main()
