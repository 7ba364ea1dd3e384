"""An in-memory ExportedProgram through Inductor: the worker (a child process that loads archives from a
path) gets a temporary copy of the archive, removed afterwards, and the report is the CLI's on the saved
files. One compile of the graph, one exploded; the CLI's run hits the Inductor cache the first filled.

Run by ctest (python_module_inductor, ~30-60 s) with PYTHONPATH=BUILD/python PT2DIFF_CLI=BUILD/pt2diff.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest

import torch

import pt2diff
from test_module import TIMING_FIELDS, WHERE_FIELDS, archive_copies, fixture, without

CLI = os.environ["PT2DIFF_CLI"]


class InductorInMemory(unittest.TestCase):
    def test_same_report_as_cli(self):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            before = archive_copies()
            ep = torch.export.load(fixture("mlp.pt2"))
            inputs = torch.load(fixture("mlp_inputs.pt"), weights_only=True)
            r = pt2diff.diff(ep, inputs, compiled="inductor", inductor_cache=cache)
            self.assertEqual([c.ok for c in r.compiles], [True, True], r.to_text())
            self.assertEqual(r.verdict, "agree")
            self.assertEqual(archive_copies() - before, set(), "the worker's archive copy was left behind")

            report = os.path.join(out, "report.json")
            p = subprocess.run([CLI, fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--inductor-cache", cache, "--json", report],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(report) as f:
                expected = json.load(f)
            fields = WHERE_FIELDS + TIMING_FIELDS
            self.assertEqual(without(json.loads(r.to_json()), fields), without(expected, fields))


if __name__ == "__main__":
    unittest.main()
