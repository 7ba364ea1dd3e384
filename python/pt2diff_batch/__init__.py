"""pt2diff_batch: triage a corpus of graphs with pt2diff, on this machine or on a Ray cluster.

`pt2diff batch SOURCE... --out DIR [-- OPTIONS]` runs `python -m pt2diff_batch --pt2diff BINARY ...`. Each case
is the pt2diff binary run as `pt2diff GRAPH INPUTS OPTIONS --json --html` in a process group of its own; the
rows and summaries are built here (docs/batch.md, docs/batch-summary.schema.json).

Modules: cases (discovery, content-hash dedupe), runner (one case: inspect, memory gate, the diff with a
timeout), rows (a case's row from exit code and report), executors (local threads, Ray tasks), store (the
output directory, resume), summary (JSON, text, CSV, HTML), progress (the terminal line), cli (the driver).
"""
