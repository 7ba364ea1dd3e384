"""Real upstream Inductor bugs (fixtures/upstream: one script per pytorch/pytorch issue), through pt2diff.
Two ctests, label inductor (tests/cli_case.py says how to run one alone).

- WriteAfterRead (main tier): pytorch#198094, `y = slice_scatter(x, src); x.zero_(); return y`. Inductor reinplaces
  the scatter into x and the later zero_ clobbers y. The failing output's cone must keep the later writer (a write
  after a read): localization names the window slice_scatter .. zero_, the aliasing hint says write_after_read, and
  the compiler search (--search-compiler) names the pass reinplace_inplaceable_ops, verified by one compile without
  it, with a lever (disabled_passes) verified too. Skipped, saying so, on a torch where the bug does not reproduce.
- Corpus (extended tier): every script whose bug reproduces on the installed torch is exported and diffed; each must
  name its CULPRIT_OPS (in the localization's culprit, or in the compiler search's decision), except the known
  misses below, each with its reason (docs/upstream.md, "A corpus of real bugs"). A bug that does not reproduce is
  skipped with the script's reason, not counted.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402

CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures", "upstream"))
MAKE = os.path.join(CORPUS, "make_upstream.py")

#: Fixtures pt2diff does not name today, and why (docs/upstream.md lists them): the test fails if one starts to be
#: named (then it leaves this list) or if any other fixture loses its culprit.
KNOWN_MISSES_CPU = {
    "bug_185337_fp16_roundtrip_elided": "the fp64 reference does not round at the explicit fp16 cast: agrees",
    "bug_195582_bn_shrinking_pad": "the compiled code reads memory it does not own: its values change from run to run",
}

#: On CUDA (scripts/gpu_test.sh part 11, PT2DIFF_UPSTREAM_DEVICE=cuda): what an H100 (torch 2.11.0+cu130) showed at
#: fd59359: 18 reproduce, 16 named (#198081 is named now, single op any_1).
KNOWN_MISSES_CUDA = {
    "bug_197431_as_strided_repeat": "the view past the slice's 3 floats reads stray GPU memory, no failed run: the whole "
                                    "graph diverges but each probe and the search's recompile pass (inconclusive)",
}
#: Races: the compiled code computes other values from run to run, so a boundary probe may answer differently when run
#: again. Either outcome is right and both pass: the window named, or localization saying `flaky` (never an
#: inconclusive or another op). #198280 went each way once in two runs on the H100.
RACES_CUDA = {
    "bug_198280_copy_transpose_loop_reorder": "a race between Triton blocks: named (window transpose .. copy_) or flaky "
                                              "at copy_ when the probe's recheck passes",
}
DEVICE = os.environ.get("PT2DIFF_UPSTREAM_DEVICE", "cpu")
KNOWN_MISSES = KNOWN_MISSES_CUDA if DEVICE.startswith("cuda") else KNOWN_MISSES_CPU
RACES = RACES_CUDA if DEVICE.startswith("cuda") else {}


def named_ops(report):
    """The short op names the report blames: the localization's culprit and the compiler search's decision."""
    ops = set()
    loc = report.get("localization") or {}
    for op in (loc.get("culprit") or {}).get("ops", []):
        ops.add(op.split(".")[1] if op.startswith("aten.") else op)
    search = report.get("compiler_search") or {}
    for op in search.get("ops", []):
        ops.add(op.split(".")[1] if op.startswith("aten.") else op)
    return ops


class UpstreamCase(CliTestCase):
    @classmethod
    def export(cls, only):
        """Exports the fixtures whose names contain `only` (None: all) that reproduce; returns corpus.json's records."""
        out = os.path.join(cls.tmp, "corpus")
        args = [sys.executable, MAKE, "--out", out] + (["--only", only] if only else [])
        p = subprocess.run(args, capture_output=True, text=True, timeout=3000)
        if p.returncode != 0:
            raise AssertionError(f"make_upstream.py failed ({p.returncode}): {p.stderr[-2000:]}")
        with open(os.path.join(out, "corpus.json")) as f:
            return json.load(f)

    def diff(self, record, *flags):
        report = os.path.join(self.tmp, record["name"] + ".json")
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
        p = subprocess.run([self.cli, record["pt2"], record["inputs"], "--json", report, *flags], capture_output=True,
                           text=True, env=env, timeout=1200)
        data = None
        if os.path.exists(report):
            with open(report) as f:
                data = json.load(f)
        return p, data


class WriteAfterRead(UpstreamCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        records = [r for r in cls.export("198094_slice_scatter_zero") if r["reproduces"]]
        cls.record = records[0] if records else None
        if cls.record:
            cls.p, cls.report = cls.diff(cls, cls.record, "--search-compiler")

    def setUp(self):
        if self.record is None:
            self.skipTest("pytorch#198094 does not reproduce on this torch")

    def test_the_window_keeps_the_later_write(self):
        culprit = self.report["localization"]["culprit"]
        self.assertEqual(self.p.returncode, 1, self.p.stdout[-3000:])
        self.assertEqual((culprit["kind"], culprit["nodes"]), ("window", ["slice_scatter", "zero_"]), culprit["summary"])

    def test_the_aliasing_hint_says_who_read_before_whom(self):
        hints = {h["kind"]: h for h in self.report["localization"]["hints"]}
        a = hints.get("aliasing")
        self.assertTrue(a is not None and a["finding"] == "write_after_read"
                        and "slice_scatter (aten.slice_scatter.default) reads it before zero_" in " ".join(a["notes"]),
                        a and (a["finding"], a["notes"]))

    def test_the_compiler_search_names_the_pass_verified(self):
        s = self.report["compiler_search"]
        self.assertEqual(s["conclusion"], "found", s["summary"])
        self.assertEqual((s["decision"]["subsystem"], s["decision"]["what"]), ("post_grad_passes", "pass reinplace_inplaceable_ops"))
        self.assertTrue(s["verified"], s["verification"])
        self.assertTrue(s["workaround_verified"] and "disabled_passes" in s["workaround"], s["workaround"])
        # Every step but the first (the graph as compiled) and the last (the verification) is a bisection step.
        self.assertFalse(s["steps"][0]["passes"])
        self.assertTrue(s["steps"][-1]["passes"] and s["steps"][-1]["off"]["skip"] == [s["decision"]["index"]])

    def test_the_evidence_agrees_or_says_which_decides(self):
        evidence = self.report["localization"]["evidence"]
        self.assertTrue(any("compiler search names pass reinplace_inplaceable_ops" in e for e in evidence), evidence)
        self.assertIn("compiler search", self.p.stdout)

    def test_report_is_valid(self):
        self.assertValidReport(self.report)


class Corpus(UpstreamCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.records = cls.export(os.environ.get("PT2DIFF_UPSTREAM_ONLY"))

    def test_every_reproducing_bug_is_named(self):
        named, missed = [], []
        for record in self.records:
            with self.subTest(record["name"]):
                if not record["reproduces"]:
                    self.skipTest(f"{record['issue']} does not reproduce here: {record['reason']}")
                p, report = self.diff(record)
                ops = named_ops(report) if report else set()
                hit = report is not None and set(record["culprit_ops"]) <= ops
                (named if hit else missed).append(record["name"])
                if record["name"] in RACES:
                    flaky = bool(report) and ((report.get("localization") or {}).get("culprit") or {}).get("kind") == "flaky"
                    self.assertTrue(hit or flaky, f"{record['name']} ({record['issue']}, a race): neither named nor flaky; "
                                                  f"names {sorted(ops)}; exit {p.returncode}: {p.stdout[-1500:]}")
                elif record["name"] in KNOWN_MISSES:
                    self.assertFalse(hit, f"{record['name']} is named now: take it off KNOWN_MISSES")
                else:
                    self.assertTrue(hit, f"{record['name']} ({record['issue']}): names {sorted(ops)}, expected "
                                         f"{record['culprit_ops']}; exit {p.returncode}: {p.stdout[-1500:]}{p.stderr[-800:]}")
        print(f"\nupstream corpus: {len(named)} of {len(named) + len(missed)} reproducing bugs named; missed: {missed}")


if __name__ == "__main__":
    unittest.main()
