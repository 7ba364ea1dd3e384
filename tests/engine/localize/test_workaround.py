"""The smallest eager set (--workaround) with the real Inductor and a bug planted in its lowering of relu
(lowering_bug_worker.py, planted_lowering.py). A ctest, label inductor (tests/cli_case.py says how to run it alone).

- mlp: relu is the culprit; left eager (a torch.compiler.disable'd call) the compiled graph passes.
  Found with 1 compile, which also verifies the lever: relu runs in the root module's forward, so the
  lever is its source line, which leaves eager that same set (no second compile of the same graph). The report is valid against docs/report.schema.json.
- in_place_confined: both of its relus run the buggy lowering (the ReLU module act1, and a torch.relu_ in
  the root forward); localization names the first, and the search adds the second (the culprit alone
  still fails). The levers: act1's forward disabled, and the second one's source line; they leave eager
  the set the search found, whose compile verifies them.
- in_place_confined with the bug at act1's shape only (PT2DIFF_PLANT_SHAPE=5,16): the lever is act1. The
  printed lines, applied as a user would: torch.export.unflatten gives the archive's module tree (the
  paths get_submodule takes); running the lines on it and torch.compile-ing it with the same planted bug
  (a child process) gives outputs that agree with eager, where the unpatched compile does not.

With PT2DIFF_TEST_DEVICE=cuda (scripts/gpu_test.sh) everything runs with `--device cuda` (Triton kernels).
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

# The user's side: the lines pt2diff printed, applied to the archive's module tree, compiled with the bug.
APPLY = r'''
import os, sys, torch
sys.path.insert(0, sys.argv[1])
import planted_lowering
planted_lowering.plant()
torch._inductor.config.fx_graph_cache = False
archive, inputs, lines, device = sys.argv[2], sys.argv[3], open(sys.argv[4]).read(), sys.argv[5]
ep = torch.export.load(archive)
args = tuple(v.to(device) for v in torch.load(inputs, weights_only=True))  # a tuple, in the graph's input order
def worst(model):
    with torch.no_grad():
        eager = model(*args)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="inductor")(*args)
    eager = eager if isinstance(eager, (tuple, list)) else (eager,)
    compiled = compiled if isinstance(compiled, (tuple, list)) else (compiled,)
    return max(float((c - e).abs().max()) for c, e in zip(compiled, eager))
before = worst(torch.export.unflatten(ep).to(device))
model = torch.export.unflatten(ep).to(device)
exec(lines, {"torch": torch, "model": model})
after = worst(model)
print(f"max |compiled - eager|: {before:.3g} without the lines, {after:.3g} with them")
sys.exit(0 if before > 1e-4 and after < 1e-5 else 1)
'''


class SmallestEagerSet(CliTestCase):
    """One pt2diff run per case (name, planted shape), in setUpClass; each test checks one case."""

    # name, planted shape, the set expected, its levers (kind, module path or the start of the source line)
    CASES = {"mlp": ("mlp", None, ["relu"], [("source_line", "make_fixtures.py:35")]),
             "in_place": ("in_place_confined", None, ["relu_", "relu__1"],
                          [("module", "act1"), ("source_line", "make_in_place_fixture.py:36")]),
             "in_place_at_one_shape": ("in_place_confined", "5,16", ["relu_"], [("module", "act1")])}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {key: cls.run_case(name, shape) for key, (name, shape, _, _) in cls.CASES.items()}

    @classmethod
    def run_case(cls, name, shape):
        report = os.path.join(cls.tmp, f"{name}-{shape}.json")
        p = subprocess.run([cls.cli, os.path.join(cls.fixtures, name + ".pt2"), os.path.join(cls.fixtures, name + "_inputs.pt"),
                            "--json", report, "--workaround", "--no-exploded",
                            "--compiled", f"external:{sys.executable} {BUG_WORKER}", "--device", cls.device],
                           capture_output=True, text=True,
                           env={**os.environ, "PT2DIFF_PLANT_OP": "relu", **({"PT2DIFF_PLANT_SHAPE": shape} if shape else {})})
        r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
        return p, r

    def check_case(self, key):
        name, shape, nodes, levers = self.CASES[key]
        p, r = self.runs[key]
        self.assertIsNotNone(r, f"pt2diff exited {p.returncode}: {p.stderr.strip()[-400:]}")
        self.assertValidReport(r)
        w = r["workaround"]
        self.assertEqual((p.returncode, r["verdict"]), (1, "diverged"), "the compiled graph diverges")
        self.assertTrue(w["conclusion"] == "found" and w["minimal"] and w["verified"], w["summary"])
        got = [n["node"] for n in w["nodes"]]
        self.assertEqual(got, nodes, "the eager set")
        got_levers = [(lever["kind"], lever["module_path"] or lever["source"]) for lever in w["levers"]]
        self.assertEqual(len(got_levers), len(levers), f"levers {got_levers}")
        for (kind, where), (got_kind, got_where) in zip(levers, got_levers):
            self.assertEqual(got_kind, kind, f"levers {got_levers}")
            self.assertTrue(got_where.startswith(where), f"levers {got_levers}")
        culprit = r["localization"]["culprit"]["nodes"] if r["localization"] else []
        if len(nodes) == 1:
            # the lever leaves eager that same set: the verification is the culprit's compile, not a second one
            self.assertEqual((culprit, w["compiles"]), (nodes, 1),
                             "one compile (the culprit eager, which the verification reuses)")
        else:
            self.assertTrue(culprit and culprit[0] in got, f"the set {got} holds the culprit {culprit}")
            self.assertLessEqual(w["compiles"], 2 + 2 * len(nodes) * 4 + 1, f"compiles for {w['candidates']} nodes")
        if all(kind == "module" for kind, _ in levers):
            lines = os.path.join(self.tmp, "lines.py")
            with open(lines, "w") as f:
                f.write("\n".join(w["lines"]) + "\n")
            applied = subprocess.run([sys.executable, "-c", APPLY, HERE, os.path.join(self.fixtures, name + ".pt2"),
                                      os.path.join(self.fixtures, name + "_inputs.pt"), lines, self.device],
                                     capture_output=True, text=True,
                                     env={**os.environ, "PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_SHAPE": shape or ""})
            self.assertEqual(applied.returncode, 0,
                             "the printed lines, applied to torch.export.unflatten(archive) and torch.compile'd with the bug: "
                             + (applied.stdout.strip() or applied.stderr.strip()[-600:]))

    def test_mlp(self):
        """relu is the culprit; its source line is the lever, verified by the culprit's own compile."""
        self.check_case("mlp")

    def test_in_place_confined(self):
        """Both relus run the buggy lowering: the culprit and the second one, a module lever and a source line."""
        self.check_case("in_place")

    def test_in_place_confined_bug_at_one_shape(self):
        """The bug at act1's shape only: the lever is act1, and its printed lines work when applied."""
        self.check_case("in_place_at_one_shape")


if __name__ == "__main__":
    unittest.main()
