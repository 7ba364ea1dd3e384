#!/usr/bin/env python3
"""Fuzz target (atheris): the corpus sources `pt2diff batch` reads besides archives (docs/security.md).

    python tests/fuzz/sources_fuzzer.py CORPUS_DIR [libFuzzer flags]      (scripts/fuzz.sh runs it)

Each input is one source, written to a fresh directory: its first byte picks the kind, the rest is the
file's bytes:
  - even: a capture directory's index.json (pt2diff_capture's), next to an archive `a.pt2` and its
    `a_inputs.pt` that entries may name;
  - odd:  a manifest (GRAPH<TAB>INPUTS[<TAB>OPTIONS] lines), in the same directory.
It then does what a batch does with a source before and after any pt2diff runs: discovery
(pt2diff_batch.cases.discover), the content keys (assign_keys), each case's row as if its pt2diff had
exited 2 (or its capture failure's row), and the summary in every format (JSON checked against
docs/batch-summary.schema.json, text, CSV, HTML). The property: a source is either read or refused with
one SourceError line; nothing else escapes, and every summary it leads to is valid.
"""
import json
import os
import sys
import tempfile

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
with atheris.instrument_imports(include=["pt2diff_batch"]):
    from pt2diff_batch import cases, rows, summary

import jsonschema  # noqa: E402 - not instrumented: it is the oracle

with open(os.path.join(ROOT, "docs", "batch-summary.schema.json")) as _f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(_f))

WORK = tempfile.mkdtemp(prefix="sources-fuzz-")
with open(os.path.join(WORK, "a.pt2"), "wb") as _f:
    _f.write(b"PK\x05\x06" + b"\0" * 18)  # an empty zip: its bytes are hashed, never loaded
with open(os.path.join(WORK, "a_inputs.pt"), "wb") as _f:
    _f.write(b"PK\x05\x06" + b"\0" * 18)


def one_source(data):
    """The source `data` describes, in WORK: the path to give discover()."""
    kind, body = (data[0], data[1:]) if data else (0, b"")
    index, manifest = os.path.join(WORK, "index.json"), os.path.join(WORK, "cases.tsv")
    for stale in (index, manifest):
        if os.path.exists(stale):
            os.remove(stale)
    if kind % 2 == 0:
        with open(index, "wb") as f:
            f.write(body)
        return WORK
    with open(manifest, "wb") as f:
        f.write(body)
    return manifest


def TestOneInput(data):
    source = one_source(data)
    try:
        found = cases.discover([source], ["--compiled", "inductor"])
    except cases.SourceError as e:
        message = str(e)
        assert message and "\n" not in message, f"a SourceError is one line: {message!r}"
        return
    first = cases.assign_keys(found)
    out = []
    for case in found:
        row = rows.make_row(case, inspect=None, returncode=None if case.failure else 2, timed_out=False, report=None,
                            stderr="pt2diff: not a pt2diff archive", seconds=0.0, inspect_seconds=0.0, timeout=60.0,
                            stage="inspect")
        row.update(report_json=None, report_html=None, case_dir=f"cases/{case.key}")  # as store.Store.publish adds
        out.append(rows.occurrence(row, case, first[case.key].name))
    doc = summary.build(out, sources=[source], options=["--compiled", "inductor"], executor="local", jobs=1,
                        wall_seconds=0.0, unique=len(first), complete=True)
    text = summary.to_json(doc)
    errors = sorted(VALIDATOR.iter_errors(json.loads(text)), key=lambda e: list(e.path))
    assert not errors, f"the summary breaks its schema at {list(errors[0].path)}: {errors[0].message}"
    summary.to_text(doc)
    summary.to_csv(doc)
    summary.to_html(doc)


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
