"""`pt2diff batch` over every fixture, a capture directory made here from a program with graph breaks, and a
manifest of cases that diverge, crash, hang, fail to load or repeat another's content. A ctest, label batch
(tests/cli_case.py says how to run it alone).

Checked: the summary (JSON valid against docs/batch-summary.schema.json, text, CSV, index.html linking each
report) has one row per place in the corpus; each planted divergence is diagnosed as `pt2diff GRAPH INPUTS`
diagnoses it alone (verdict, culprit, hints); a compiler crash, a hang (--case-timeout), a missing and a
truncated archive are rows with their failure kind; identical content is diagnosed once and reported twice;
an Inductor case fills the shared cache; a second run refuses the directory without --resume and, with it,
runs nothing again and gives the same summary; bad sources and reserved flags are one line and exit 2.
"""
import csv
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402
from batch_support import BROKEN_WORKER, batch, comparable, make_capture, read_json, runs  # noqa: E402

BROKEN = f"external:{sys.executable} {BROKEN_WORKER}"


def alive(pid):
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


class Corpus(CliTestCase):
    """One batch over the capture, the manifest and every fixture (under eager), in setUpClass; then the same case
    run alone, a second run into the same directory, and one with --resume."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = cls.tmp

        def fixture(name):
            return os.path.join(cls.fixtures, name)

        cls.capture = capture = os.path.join(tmp, "captured")
        cls.graphs = make_capture(capture)

        # A copy of attention_core under other names: the same content, diagnosed once.
        cls.copies = copies = os.path.join(tmp, "copies")
        os.makedirs(copies)
        shutil.copy(fixture("attention_core.pt2"), os.path.join(copies, "attn.pt2"))
        shutil.copy(fixture("attention_inputs.pt"), os.path.join(copies, "attn_in.pt"))

        def rel(p):  # manifest paths are relative to the manifest
            return os.path.relpath(p, tmp)
        cls.lines = lines = [
            f"{rel(fixture('attention_core.pt2'))}\t{rel(fixture('attention_inputs.pt'))}\t--compiled fault:aten.bmm#2:bf16",
            "copies/attn.pt2\tcopies/attn_in.pt\t--compiled fault:aten.bmm#2:bf16",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled fault:linear:scale",
            f"{rel(fixture('mixed_precision.pt2'))}\t{rel(fixture('mixed_precision_inputs.pt'))}\t--compiled fault:add:demote",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled '{BROKEN} crash' --no-exploded",
            "missing.pt2\t-",
            f"{rel(fixture('malformed/truncated.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled inductor --no-exploded",
        ]
        manifest = os.path.join(tmp, "corpus.tsv")
        with open(manifest, "w") as f:
            f.write("# graph\tinputs\toptions\n" + "\n".join(lines) + "\n")

        cls.out = out = os.path.join(tmp, "out")
        args = [capture, manifest, cls.fixtures, "--out", out, "--jobs", "2", "--case-timeout", "300",
                "--", "--compiled", "eager"]
        cls.first = batch(cls.cli, *args)
        cls.doc = doc = read_json(os.path.join(out, "summary.json"))
        cls.first_runs = {r["key"]: runs(out, r["key"]) for r in doc["cases"]}
        # What the first run wrote beside summary.json (--resume below writes them again).
        with open(os.path.join(out, "index.html")) as f:
            cls.index_html = f.read()
        with open(os.path.join(out, "summary.csv")) as f:
            cls.table = list(csv.DictReader(f))
        with open(os.path.join(out, "summary.txt")) as f:
            cls.summary_txt = f.read()
        # A graph can occur with other options (the manifest's fixtures are also in FIXTURES, under eager).
        cls.rows = {(r["graph"], r["options"][1] if len(r["options"]) > 1 else ""): r for r in doc["cases"]}
        cls.n_fixtures = len([n for n in os.listdir(cls.fixtures) if n.endswith(".pt2")])

        # The same diagnosis as the single-graph command with the same options.
        alone_json = os.path.join(tmp, "alone.json")
        cls.alone = subprocess.run([cls.cli, fixture("attention_core.pt2"), fixture("attention_inputs.pt"),
                                    "--compiled", "fault:aten.bmm#2:bf16", "--json", alone_json], capture_output=True, text=True)
        cls.single = read_json(alone_json)

        cls.again = batch(cls.cli, *args)
        cls.before = {r["key"]: runs(out, r["key"]) for r in doc["cases"]}
        cls.resumed = batch(cls.cli, *(args[:-3] + ["--resume"] + args[-3:]))
        cls.after = {k: runs(out, k) for k in cls.before}
        cls.resumed_doc = read_json(os.path.join(out, "summary.json"))

    def row(self, path, compiled="eager"):
        return self.rows[(os.path.abspath(path), compiled)]

    def mlp_row(self, compiled):
        """The manifest's row of mlp under --compiled COMPILED (its last word)."""
        mlp_rows = [r for r in self.doc["cases"]
                    if r["graph"] == self.fixture("mlp.pt2") and r["options"] != ["--compiled", "eager"]]
        return {r["options"][1].split()[-1]: r for r in mlp_rows}[compiled]

    def test_capture_has_three_graphs(self):
        graphs = self.graphs
        self.assertTrue(len(graphs) == 3 and all(g["status"] == "ok" for g in graphs),
                        f"the program's capture has 3 graphs ({len(graphs)})")

    def test_exit_1(self):
        self.assertEqual(self.first.returncode, 1,
                         f"exit 1: some cases diverge or fail ({self.first.returncode}; {self.first.stderr.strip()[-300:]})")

    def test_summary_matches_the_schema(self):
        """summary.json matches docs/batch-summary.schema.json."""
        self.assertValidReport(self.doc, "batch-summary")

    def test_one_row_per_place(self):
        doc = self.doc
        self.assertTrue(len(doc["cases"]) == 3 + len(self.lines) + self.n_fixtures
                        and doc["counts"]["unique"] == len(doc["cases"]) - 1,
                        f"one row per place: {len(doc['cases'])} rows, {doc['counts']['unique']} distinct")

    def test_summary_complete(self):
        self.assertTrue(self.doc["complete"], "the summary is complete")

    def test_planted_bf16_bmm(self):
        """Diverged, culprit aten.bmm.default with its source line, promotion hint."""
        attention = self.row(self.fixture("attention_core.pt2"), "fault:aten.bmm#2:bf16")
        self.assertTrue(attention["verdict"] == "diverged" and attention["culprit_op"] == "aten.bmm.default"
                        and {"kind": "dtype_promotion", "finding": "lower_precision_than_promotion"} in attention["hints"]
                        and attention["culprit"]["sources"][0].startswith("make_fixtures.py:"),
                        f"the planted bf16 bmm: diverged, culprit aten.bmm.default with its source line, promotion hint "
                        f"({attention['verdict']}, {attention['culprit_op']}, {attention['hints']})")

    def test_identical_content_diagnosed_once(self):
        """The copy of attention_core is the same content: diagnosed once, reported twice."""
        attention = self.row(self.fixture("attention_core.pt2"), "fault:aten.bmm#2:bf16")
        copy = self.row(os.path.join(self.copies, "attn.pt2"), "fault:aten.bmm#2:bf16")
        self.assertTrue(copy["key"] == attention["key"] and copy["duplicate_of"] == attention["case"]
                        and attention["duplicate_of"] is None and copy["verdict"] == attention["verdict"]
                        and self.first_runs[attention["key"]] == 1,
                        f"the copy is the same content: diagnosed once ({self.first_runs[attention['key']]} run), reported twice")

    def test_culprit_counts(self):
        self.assertEqual(self.doc["culprit_ops"].get("aten.bmm.default"), 2,
                         f"culprit counts across the corpus: {self.doc['culprit_ops']}")

    def test_hint_finding_counts(self):
        self.assertGreaterEqual(self.doc["hint_findings"].get("dtype_promotion:lower_precision_than_promotion", 0), 2,
                                f"hint finding counts: {self.doc['hint_findings']}")

    def test_same_as_run_alone(self):
        """The batch's report of a case equals `pt2diff GRAPH INPUTS` run alone (verdicts, culprit, hints)."""
        attention = self.row(self.fixture("attention_core.pt2"), "fault:aten.bmm#2:bf16")
        single, in_batch = self.single, read_json(os.path.join(self.out, attention["report_json"]))
        self.assertTrue(self.alone.returncode == 1 and single["verdict"] == in_batch["verdict"]
                        and single["outputs"] == in_batch["outputs"]
                        and single["localization"]["culprit"] == in_batch["localization"]["culprit"]
                        and [h["finding"] for h in single["localization"]["hints"]]
                        == [h["finding"] for h in in_batch["localization"]["hints"]],
                        "the batch's report of a case equals `pt2diff GRAPH INPUTS` run alone (verdicts, culprit, hints)")

    def test_scaled_linear(self):
        scale = self.mlp_row("fault:linear:scale")
        self.assertTrue(scale["verdict"] == "diverged" and scale["culprit_op"] == "aten.linear.default",
                        f"mlp with a scaled linear: culprit aten.linear.default ({scale['culprit_op']})")

    def test_compiler_crash(self):
        crash = self.mlp_row("crash")
        self.assertTrue(crash["failure"] == "worker_died" and crash["exit_code"] == 4 and crash["message"],
                        "a compiler that crashes: worker_died, exit 4 "
                        f"({crash['failure']}, {crash['exit_code']}: {crash['message']})")

    def test_inductor_fills_the_shared_cache(self):
        """mlp through Inductor agrees and fills DIR/inductor-cache."""
        inductor = self.mlp_row("inductor")
        cached = sum(len(files) for _, _, files in os.walk(os.path.join(self.out, "inductor-cache")))
        self.assertTrue(inductor["verdict"] == "agree" and inductor["failure"] is None and cached > 0,
                        f"mlp through Inductor agrees and fills the shared cache DIR/inductor-cache ({inductor['verdict']}, "
                        f"{cached} files, compile {inductor['compile_seconds']} s, {inductor['options']})")

    def test_missing_archive(self):
        missing = self.row(os.path.join(self.tmp, "missing.pt2"))
        self.assertTrue(missing["failure"] == "bad_input" and "missing.pt2" in missing["message"] and missing["inputs"] is None,
                        f"a missing archive: bad_input naming it ({missing['message']})")

    def test_truncated_archive(self):
        truncated = self.row(self.fixture("malformed/truncated.pt2"))
        self.assertTrue(truncated["failure"] == "bad_input" and truncated["message"],
                        f"a truncated archive: bad_input ({truncated['message']})")

    def test_demoted_add(self):
        demote = self.row(self.fixture("mixed_precision.pt2"), "fault:add:demote")
        self.assertTrue(demote["verdict"] == "diverged" and demote["culprit_op"],
                        f"mixed_precision with a demoted add: {demote['culprit_op']}")

    def test_captured_graphs_agree(self):
        """The 3 captured graphs agree under eager, each with its source location."""
        captured = [r for r in self.doc["cases"] if r["graph"].startswith(self.capture)]
        self.assertTrue(len(captured) == 3 and all(r["verdict"] == "agree" and r["where"] for r in captured),
                        "the 3 captured graphs agree under eager, each with its source location "
                        f"({[r['where'] for r in captured]})")

    def test_fixtures_under_eager(self):
        """Every fixture under eager agrees but those needing a Python op or --load-library."""
        fixture_rows = [r for r in self.doc["cases"]
                        if os.path.dirname(r["graph"]) == self.fixtures and r["options"] == ["--compiled", "eager"]]
        bad = {os.path.basename(r["graph"]) for r in fixture_rows if r["failure"]}
        self.assertTrue(len(fixture_rows) == self.n_fixtures and bad == {"python_only_ops.pt2", "python_only_ops_core.pt2",
                                                                         "mutating_custom_op.pt2", "mutating_custom_op_core.pt2"}
                        and all(r["verdict"] == "agree" for r in fixture_rows if not r["failure"]),
                        f"every fixture under eager agrees but those needing a Python op or --load-library ({sorted(bad)})")

    def test_memory_estimates(self):
        self.assertTrue(all(r["memory_estimate"] > 0 for r in self.doc["cases"] if r["verdict"]),
                        "every diagnosed case has inspect's memory estimate (what the memory gate reserves)")

    def test_html_reports(self):
        self.assertTrue(all(r["failure"] or os.path.isfile(os.path.join(self.out, r["report_html"])) for r in self.doc["cases"]),
                        "every diagnosed case has its HTML report")

    def test_index_html_links_every_report(self):
        self.assertTrue(all(r["report_html"] is None or f"href='{r['report_html']}'" in self.index_html
                            for r in self.doc["cases"]),
                        "index.html links every case's report")

    def test_summary_csv(self):
        table = self.table
        self.assertTrue(len(table) == len(self.doc["cases"]) and table[0]["case"] == self.doc["cases"][0]["case"],
                        f"summary.csv: {len(table)} rows")

    def test_summary_txt_is_the_table_printed(self):
        self.assertIn(self.summary_txt, self.first.stdout, "summary.txt is the table printed")

    def test_second_run_refused_without_resume(self):
        again = self.again
        self.assertTrue(again.returncode == 2 and "--resume" in again.stderr and len(again.stderr.strip().splitlines()) == 1,
                        f"a second run into DIR: one line naming --resume, exit 2 ({again.returncode}: {again.stderr.strip()})")

    def test_resume_runs_nothing_again(self):
        self.assertTrue(self.resumed.returncode == 1 and self.before == self.after and all(v == 1 for v in self.after.values()),
                        "--resume on a finished batch runs nothing again (every case started once)")

    def test_resume_gives_the_same_summary(self):
        self.assertEqual(comparable(self.resumed_doc), comparable(self.doc), "and gives the same summary")


class HungCase(CliTestCase):
    """A compiler that hangs (pt2diff's own --timeout far away): the case's process group is killed at --case-timeout."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp, mlp, mlp_inputs = cls.tmp, os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt")
        hang_manifest = os.path.join(tmp, "hang.tsv")
        with open(hang_manifest, "w") as f:
            f.write(f"{mlp}\t{mlp_inputs}\t--compiled '{BROKEN} hang_with_child' --timeout 600 --no-exploded\n")
            f.write(f"{mlp}\t{mlp_inputs}\t--compiled eager\n")
        record = os.path.join(tmp, "broken_worker.pids")

        # The worker must have started (and noted its pid) before the case is killed: on two busy cores the case's
        # inspect and the engine's start took more than 5 s, and once (a cold suite beside it) more than 10 s, to get
        # there. Where the record is missing, the case runs again with a longer --case-timeout.
        def recorded():
            if not os.path.exists(record):
                return []
            with open(record) as f:
                return [int(line.split()[1]) for line in f if line.split()[0] in ("worker", "child")]

        for timeout in (10, 30):
            if os.path.exists(record):
                os.remove(record)
            cls.hang_run = batch(cls.cli, hang_manifest, "--out", os.path.join(tmp, f"hang-{timeout}"), "--case-timeout",
                                 str(timeout), env=dict(os.environ, BROKEN_WORKER_RECORD=record))
            if len(recorded()) == 2:
                break
        cls.timeout = timeout
        cls.hang, cls.after_hang = read_json(os.path.join(tmp, f"hang-{timeout}", "summary.json"))["cases"]
        cls.pids = pids = recorded()
        deadline = time.monotonic() + 5
        while [p for p in pids if alive(p)] and time.monotonic() < deadline:  # killed: gone once reaped
            time.sleep(0.1)
        cls.left = [p for p in pids if alive(p)]

    def test_worker_and_child_started(self):
        self.assertEqual(len(self.pids), 2, "the hung case's worker and its child started before the kill "
                                            f"({len(self.pids)} pids recorded, --case-timeout {self.timeout})")

    def test_nothing_left_running(self):
        self.assertEqual(len(self.left), 0, "nothing of the hung case is left running: its worker and the worker's child are "
                                            f"killed ({len(self.pids)} pids; left {self.left})")

    def test_hung_after_case_timeout(self):
        """The case is hung after --case-timeout, and the next case runs."""
        hang, timeout = self.hang, self.timeout
        self.assertTrue(self.hang_run.returncode == 1 and hang["failure"] == "hung" and timeout <= hang["seconds"] < timeout + 30
                        and self.after_hang["verdict"] == "agree",
                        f"a compiler that hangs: hung after --case-timeout {timeout}, and the next case runs ({hang['failure']}, "
                        f"{hang['seconds']} s: {hang['message']})")


class BadSources(CliTestCase):
    def test_one_line_exit_2(self):
        """A SOURCE that does not exist, a reserved flag (--json): one line, exit 2."""
        manifest = os.path.join(self.tmp, "corpus.tsv")
        with open(manifest, "w") as f:
            f.write(f"{self.fixture('mlp.pt2')}\t{self.fixture('mlp_inputs.pt')}\n")
        for bad_args, what in [(["/nonexistent/corpus", "--out", os.path.join(self.tmp, "o2")], "a SOURCE that does not exist"),
                               ([manifest, "--out", os.path.join(self.tmp, "o3"), "--", "--json", "x.json"],
                                "a reserved flag (--json)")]:
            with self.subTest(what):
                r = batch(self.cli, *bad_args)
                self.assertTrue(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
                                f"{what}: one line, exit 2 ({r.stderr.strip()})")

    def test_manifest_line_of_four_columns(self):
        bad_manifest = os.path.join(self.tmp, "bad.tsv")
        with open(bad_manifest, "w") as f:
            f.write("a.pt2\tb.pt\t--seed 1\textra\n")
        r = batch(self.cli, bad_manifest, "--out", os.path.join(self.tmp, "o4"))
        self.assertTrue(r.returncode == 2 and "bad.tsv:1" in r.stderr,
                        f"a manifest line of 4 columns: its line named ({r.stderr.strip()})")


if __name__ == "__main__":
    unittest.main()
