#!/usr/bin/env python3
"""`pt2diff batch` over every fixture, a capture directory made here from a program with graph breaks, and a
manifest of cases that diverge, crash, hang, fail to load or repeat another's content (run by ctest).

    batch_corpus.py PT2DIFF

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
import tempfile
import time

from support import BROKEN_WORKER, FIXTURES, Checks, batch, comparable, make_capture, read_json, runs, validate


def alive(pid):
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def fixture(name):
    return os.path.join(FIXTURES, name)


def main():
    pt2diff = sys.argv[1]
    c = Checks("batch corpus")
    tmp = tempfile.mkdtemp(prefix="pt2diff-batch-corpus-")
    try:
        capture = os.path.join(tmp, "captured")
        graphs = make_capture(capture)
        c.check(len(graphs) == 3 and all(g["status"] == "ok" for g in graphs), f"the program's capture has 3 graphs ({len(graphs)})")

        # A copy of attention_core under other names: the same content, diagnosed once.
        copies = os.path.join(tmp, "copies")
        os.makedirs(copies)
        shutil.copy(fixture("attention_core.pt2"), os.path.join(copies, "attn.pt2"))
        shutil.copy(fixture("attention_inputs.pt"), os.path.join(copies, "attn_in.pt"))
        rel = lambda p: os.path.relpath(p, tmp)  # manifest paths are relative to the manifest  # noqa: E731
        broken = f"external:{sys.executable} {BROKEN_WORKER}"
        lines = [
            f"{rel(fixture('attention_core.pt2'))}\t{rel(fixture('attention_inputs.pt'))}\t--compiled fault:aten.bmm#2:bf16",
            "copies/attn.pt2\tcopies/attn_in.pt\t--compiled fault:aten.bmm#2:bf16",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled fault:linear:scale",
            f"{rel(fixture('mixed_precision.pt2'))}\t{rel(fixture('mixed_precision_inputs.pt'))}\t--compiled fault:add:demote",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled '{broken} crash' --no-exploded",
            "missing.pt2\t-",
            f"{rel(fixture('malformed/truncated.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}",
            f"{rel(fixture('mlp.pt2'))}\t{rel(fixture('mlp_inputs.pt'))}\t--compiled inductor --no-exploded",
        ]
        manifest = os.path.join(tmp, "corpus.tsv")
        with open(manifest, "w") as f:
            f.write("# graph\tinputs\toptions\n" + "\n".join(lines) + "\n")

        out = os.path.join(tmp, "out")
        args = [capture, manifest, FIXTURES, "--out", out, "--jobs", "2", "--case-timeout", "300", "--", "--compiled", "eager"]
        run = batch(pt2diff, *args)
        c.check(run.returncode == 1, f"exit 1: some cases diverge or fail ({run.returncode}; {run.stderr.strip()[-300:]})")
        print(run.stdout)
        doc = read_json(os.path.join(out, "summary.json"))
        err = validate(doc, "batch-summary.schema.json")
        c.check(err is None, f"summary.json matches docs/batch-summary.schema.json ({err})")
        # A graph can occur with other options (the manifest's fixtures are also in FIXTURES, under eager).
        rows = {(r["graph"], r["options"][1] if len(r["options"]) > 1 else "") : r for r in doc["cases"]}
        n_fixtures = len([n for n in os.listdir(FIXTURES) if n.endswith(".pt2")])
        c.check(len(doc["cases"]) == 3 + len(lines) + n_fixtures and doc["counts"]["unique"] == len(doc["cases"]) - 1,
                f"one row per place: {len(doc['cases'])} rows, {doc['counts']['unique']} distinct")
        c.check(doc["complete"], "the summary is complete")

        def row(path, compiled="eager"):
            return rows[(os.path.abspath(path), compiled)]

        attention = row(fixture("attention_core.pt2"), "fault:aten.bmm#2:bf16")
        c.check(attention["verdict"] == "diverged" and attention["culprit_op"] == "aten.bmm.default"
                and {"kind": "dtype_promotion", "finding": "lower_precision_than_promotion"} in attention["hints"]
                and attention["culprit"]["sources"][0].startswith("make_fixtures.py:"),
                f"the planted bf16 bmm: diverged, culprit aten.bmm.default with its source line, promotion hint "
                f"({attention['verdict']}, {attention['culprit_op']}, {attention['hints']})")
        copy = row(os.path.join(copies, "attn.pt2"), "fault:aten.bmm#2:bf16")
        c.check(copy["key"] == attention["key"] and copy["duplicate_of"] == attention["case"] and attention["duplicate_of"] is None
                and copy["verdict"] == attention["verdict"] and runs(out, attention["key"]) == 1,
                f"the copy is the same content: diagnosed once ({runs(out, attention['key'])} run), reported twice")
        c.check(doc["culprit_ops"].get("aten.bmm.default") == 2, f"culprit counts across the corpus: {doc['culprit_ops']}")
        c.check(doc["hint_findings"].get("dtype_promotion:lower_precision_than_promotion", 0) >= 2,
                f"hint finding counts: {doc['hint_findings']}")

        # The same diagnosis as the single-graph command with the same options.
        alone_json = os.path.join(tmp, "alone.json")
        alone = subprocess.run([pt2diff, fixture("attention_core.pt2"), fixture("attention_inputs.pt"), "--compiled", "fault:aten.bmm#2:bf16",
                                "--json", alone_json], capture_output=True, text=True)
        single = read_json(alone_json)
        in_batch = read_json(os.path.join(out, attention["report_json"]))
        c.check(alone.returncode == 1 and single["verdict"] == in_batch["verdict"] and single["outputs"] == in_batch["outputs"]
                and single["localization"]["culprit"] == in_batch["localization"]["culprit"]
                and [h["finding"] for h in single["localization"]["hints"]] == [h["finding"] for h in in_batch["localization"]["hints"]],
                "the batch's report of a case equals `pt2diff GRAPH INPUTS` run alone (verdicts, culprit, hints)")

        mlp_rows = [r for r in doc["cases"] if r["graph"] == fixture("mlp.pt2") and r["options"] != ["--compiled", "eager"]]
        by_compiled = {r["options"][1].split()[-1]: r for r in mlp_rows}
        scale = by_compiled["fault:linear:scale"]
        c.check(scale["verdict"] == "diverged" and scale["culprit_op"] == "aten.linear.default",
                f"mlp with a scaled linear: culprit aten.linear.default ({scale['culprit_op']})")
        crash = by_compiled["crash"]
        c.check(crash["failure"] == "worker_died" and crash["exit_code"] == 4 and crash["message"],
                f"a compiler that crashes: worker_died, exit 4 ({crash['failure']}, {crash['exit_code']}: {crash['message']})")
        inductor = by_compiled["inductor"]
        cache = os.path.join(out, "inductor-cache")
        cached = sum(len(files) for _, _, files in os.walk(cache))
        c.check(inductor["verdict"] == "agree" and inductor["failure"] is None and cached > 0,
                f"mlp through Inductor agrees and fills the shared cache DIR/inductor-cache ({inductor['verdict']}, {cached} files, compile {inductor['compile_seconds']} s, {inductor['options']})")
        missing = row(os.path.join(tmp, "missing.pt2"))
        c.check(missing["failure"] == "bad_input" and "missing.pt2" in missing["message"] and missing["inputs"] is None,
                f"a missing archive: bad_input naming it ({missing['message']})")
        truncated = row(fixture("malformed/truncated.pt2"))
        c.check(truncated["failure"] == "bad_input" and truncated["message"],
                f"a truncated archive: bad_input ({truncated['message']})")
        demote = row(fixture("mixed_precision.pt2"), "fault:add:demote")
        c.check(demote["verdict"] == "diverged" and demote["culprit_op"], f"mixed_precision with a demoted add: {demote['culprit_op']}")

        captured = [r for r in doc["cases"] if r["graph"].startswith(capture)]
        c.check(len(captured) == 3 and all(r["verdict"] == "agree" and r["where"] for r in captured),
                f"the 3 captured graphs agree under eager, each with its source location ({[r['where'] for r in captured]})")
        fixture_rows = [r for r in doc["cases"] if os.path.dirname(r["graph"]) == FIXTURES and r["options"] == ["--compiled", "eager"]]
        bad = {os.path.basename(r["graph"]) for r in fixture_rows if r["failure"]}
        c.check(len(fixture_rows) == n_fixtures and bad == {"python_only_ops.pt2", "python_only_ops_core.pt2",
                                                            "mutating_custom_op.pt2", "mutating_custom_op_core.pt2"}
                and all(r["verdict"] == "agree" for r in fixture_rows if not r["failure"]),
                f"every fixture under eager agrees but those needing a Python op or --load-library ({sorted(bad)})")
        c.check(all(r["memory_estimate"] > 0 for r in doc["cases"] if r["verdict"]),
                "every diagnosed case has inspect's memory estimate (what the memory gate reserves)")
        c.check(all(r["failure"] or os.path.isfile(os.path.join(out, r["report_html"])) for r in doc["cases"]),
                "every diagnosed case has its HTML report")
        with open(os.path.join(out, "index.html")) as f:
            index = f.read()
        c.check(all(r["report_html"] is None or f"href='{r['report_html']}'" in index for r in doc["cases"]),
                "index.html links every case's report")
        with open(os.path.join(out, "summary.csv")) as f:
            table = list(csv.DictReader(f))
        c.check(len(table) == len(doc["cases"]) and table[0]["case"] == doc["cases"][0]["case"], f"summary.csv: {len(table)} rows")
        with open(os.path.join(out, "summary.txt")) as f:
            c.check(f.read() in run.stdout, "summary.txt is the table printed")

        # A compiler that hangs (pt2diff's own --timeout far away): the case's process group is killed at --case-timeout.
        hang_manifest = os.path.join(tmp, "hang.tsv")
        with open(hang_manifest, "w") as f:
            f.write(f"{fixture('mlp.pt2')}\t{fixture('mlp_inputs.pt')}\t--compiled '{broken} hang_with_child' --timeout 600 --no-exploded\n")
            f.write(f"{fixture('mlp.pt2')}\t{fixture('mlp_inputs.pt')}\t--compiled eager\n")
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
            hang_run = batch(pt2diff, hang_manifest, "--out", os.path.join(tmp, f"hang-{timeout}"), "--case-timeout",
                             str(timeout), env=dict(os.environ, BROKEN_WORKER_RECORD=record))
            if len(recorded()) == 2:
                break
            print(f"      the hung case's worker and its child had not both started within --case-timeout {timeout}")
        hang, after_hang = read_json(os.path.join(tmp, f"hang-{timeout}", "summary.json"))["cases"]
        pids = recorded()
        c.check(len(pids) == 2, f"the hung case's worker and its child started before the kill ({len(pids)} pids recorded)")
        deadline = time.monotonic() + 5
        while [p for p in pids if alive(p)] and time.monotonic() < deadline:  # killed: gone once reaped
            time.sleep(0.1)
        left = [p for p in pids if alive(p)]
        c.check(len(left) == 0, f"nothing of the hung case is left running: its worker and the worker's child are killed ({len(pids)} pids; left {left})")
        c.check(hang_run.returncode == 1 and hang["failure"] == "hung" and timeout <= hang["seconds"] < timeout + 30
                and after_hang["verdict"] == "agree",
                f"a compiler that hangs: hung after --case-timeout {timeout}, and the next case runs ({hang['failure']}, {hang['seconds']} s: "
                f"{hang['message']})")

        again = batch(pt2diff, *args)
        c.check(again.returncode == 2 and "--resume" in again.stderr and len(again.stderr.strip().splitlines()) == 1,
                f"a second run into DIR: one line naming --resume, exit 2 ({again.returncode}: {again.stderr.strip()})")
        before = {r["key"]: runs(out, r["key"]) for r in doc["cases"]}
        resumed = batch(pt2diff, *(args[:-3] + ["--resume"] + args[-3:]))
        after = {k: runs(out, k) for k in before}
        c.check(resumed.returncode == 1 and before == after and all(v == 1 for v in after.values()),
                "--resume on a finished batch runs nothing again (every case started once)")
        c.check(comparable(read_json(os.path.join(out, "summary.json"))) == comparable(doc), "and gives the same summary")

        for bad_args, what in [(["/nonexistent/corpus", "--out", os.path.join(tmp, "o2")], "a SOURCE that does not exist"),
                               ([manifest, "--out", os.path.join(tmp, "o3"), "--", "--json", "x.json"], "a reserved flag (--json)")]:
            r = batch(pt2diff, *bad_args)
            c.check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, f"{what}: one line, exit 2 ({r.stderr.strip()})")
        bad_manifest = os.path.join(tmp, "bad.tsv")
        with open(bad_manifest, "w") as f:
            f.write("a.pt2\tb.pt\t--seed 1\textra\n")
        r = batch(pt2diff, bad_manifest, "--out", os.path.join(tmp, "o4"))
        c.check(r.returncode == 2 and "bad.tsv:1" in r.stderr, f"a manifest line of 4 columns: its line named ({r.stderr.strip()})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
