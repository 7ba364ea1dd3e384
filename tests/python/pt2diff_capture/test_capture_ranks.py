"""Capture under a process group (issue 71, its first part): `python -m pt2diff_capture ranks --nproc N SCRIPT OUT` runs a
script on N gloo ranks of this machine, and a capture backend under an initialized process group writes one folder
per rank, OUT/rank_R, whose index.json says the rank, the world size, the backend, the groups (name and global
ranks) and, for each graph, the collectives it issues in order (op, group, reduction). Before, every rank wrote
OUT/index.json and the graphs overwrote each other. A ctest, label capture (tests/cli_case.py).

Checked on the tensor-parallel block of tests/python/pt2diff_capture/ranks/tp_step.py, 2 ranks: each rank's
folder holds its forward and backward graphs, and the forward lists the all_reduce of the partial sums and its wait.
(Judging these graphs, whose collectives need the other ranks' values, is `pt2diff dist`: not built yet.)
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

    def test_a_script_that_fails_is_one_line_and_exit_two(self):
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        p = subprocess.run([sys.executable, "-m", "pt2diff_capture", "ranks", "--nproc", "2", "/nonexistent/x.py"],
                           capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip(), "pt2diff_capture: /nonexistent/x.py: no such script")


if __name__ == "__main__":
    unittest.main()
