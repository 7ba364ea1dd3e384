#!/usr/bin/env python3
"""Compiles beside the engine's runs (--overlap, engine/diff/compile_ahead.h) give the report the run gives
without them (a ctest).

    compiles_overlapped.py PT2DIFF FIXTURES_DIR

1. A real compiler bug: tests/engine/localize/lowp_matmul_worker.py (Inductor computing float32 matrix
   products in bfloat16) on mlp, `--overlap off` and `--overlap on`: the JSON reports are the same but for
   their timings and memory figures (report_checks.without_measurements): verdicts, node table with the exploded compile's column,
   compiles in the same order, localization with its probes, hints. Both runs start their workers through a
   wrapper that notes when each starts (worker server off): without overlap one worker; with it two, the
   second (the exploded compile's) started while the first was still compiling the whole graph.
   The overlapped report has the stage compile_exploded_ahead (the exploded compile, run after run_references).
2. A clean graph (attention_core, stock Inductor): the same report either way.
3. A compiler that cannot start (a worker that exits at once): with overlap the second worker's start ahead
   (Backend::start_ahead) fails unreported, and the run reports what it reports without overlap, exit code
   and report alike.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from report_checks import without_measurements  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LOWP_WORKER = os.path.join(HERE, "localize", "lowp_matmul_worker.py")


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: {json.dumps(a)[:200]} against {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'the first' if k in a else 'the second'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {json.dumps(a)[:200]} against {json.dumps(b)[:200]}"


def diff(pt2diff, args, report, env=None):
    run = subprocess.run([pt2diff, *args, "--json", report], capture_output=True, text=True, env={**os.environ, **(env or {})})
    doc = json.load(open(report)) if os.path.exists(report) else None
    return run, doc


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    failures = []

    def check(ok, what, detail=""):
        print(f"{'ok' if ok else 'FAILED'}: {what}" + (f"\n  {detail}" if detail and not ok else ""))
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        # 1. a planted bug: exploded suspects, localization, hints
        wrapper = os.path.join(tmp, "python-noting-workers")
        graph, inputs = os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt")
        reports, starts = {}, {}
        for overlap in ("off", "on"):
            log = os.path.join(tmp, f"workers-{overlap}.log")
            with open(wrapper, "w") as f:
                f.write(f"#!/bin/sh\necho \"$(date +%s.%N)\" >> {log}\nexec {sys.executable} \"$@\"\n")
            os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
            run, reports[overlap] = diff(pt2diff, [graph, inputs, "--compiled", f"external:{wrapper} {LOWP_WORKER}", "--overlap", overlap],
                                         os.path.join(tmp, f"lowp-{overlap}.json"), {"PT2DIFF_WORKER_SERVER": "0"})
            starts[overlap] = sorted(float(t) for t in open(log).read().split()) if os.path.exists(log) else []
            loc = (reports[overlap] or {}).get("localization") or {}
            check(run.returncode == 1 and (loc.get("culprit") or {}).get("kind") == "single_op",
                  f"mlp, matmuls in bf16, --overlap {overlap}: diverged (exit 1), localized to one op "
                  f"({run.returncode}, {(loc.get('culprit') or {}).get('nodes')}, {len(reports[overlap]['compiles']) if reports[overlap] else 0} compiles)",
                  run.stderr[-2000:] + run.stdout[-2000:])
        if reports["off"] and reports["on"]:
            d = first_difference(without_measurements(reports["off"]), without_measurements(reports["on"]))
            check(d is None, "the same report, timings aside, with and without overlap (compiles, nodes, localization, hints)", d)
            exploded = [n for n in reports["on"]["nodes"] if any("compiled_local" in v for v in n.get("values", []))]
            check(len(exploded) > 0, f"the exploded compile's column is there ({len(exploded)} nodes)")
            check(len(starts["off"]) == 1, f"without overlap, one worker ({len(starts['off'])} started)")
            # The exploded compile started ahead has its own stage record, right after run_references: its wait and
            # compile are not counted as the lockstep runs' time.
            names = {k: [st["name"] for st in reports[k]["stages"]] for k in ("off", "on")}
            ahead = [st["seconds"] for st in reports["on"]["stages"] if st["name"] == "compile_exploded_ahead"]
            exploded_s = sum(c["compile_seconds"] + c["run_seconds"] for c in reports["on"]["compiles"] if c["what"] == "exploded")
            check("compile_exploded_ahead" not in names["off"] and names["on"][1:3] == ["run_references", "compile_exploded_ahead"]
                  and ahead and ahead[0] >= 0.9 * exploded_s,
                  f"with --overlap on, the stage compile_exploded_ahead after run_references holds the exploded compile "
                  f"({ahead} s, the compile and run {exploded_s:.2f} s); without overlap no such stage", names)
            graph_compile = reports["on"]["compiles"][0]["compile_seconds"]
            on = starts["on"]
            check(len(on) == 2 and on[1] - on[0] < graph_compile,
                  f"with --overlap on, two workers, the second started {on[1] - on[0] if len(on) == 2 else -1:.2f} s after the first, "
                  f"within the whole graph's compile ({graph_compile:.2f} s)")

        # 2. a clean graph through the stock Inductor
        graph, inputs = os.path.join(fixtures, "attention_core.pt2"), os.path.join(fixtures, "attention_inputs.pt")
        clean = {}
        for overlap in ("off", "on"):
            run, clean[overlap] = diff(pt2diff, [graph, inputs, "--overlap", overlap], os.path.join(tmp, f"attention-{overlap}.json"))
            check(run.returncode == 0, f"attention_core, --overlap {overlap}: agrees (exit {run.returncode})", run.stderr[-2000:])
        if clean["off"] and clean["on"]:
            d = first_difference(without_measurements(clean["off"]), without_measurements(clean["on"]))
            check(d is None, "attention_core: the same report with and without overlap", d)

        # 3. a compiler that cannot start
        dead, codes = {}, {}
        for overlap in ("off", "on"):
            run, dead[overlap] = diff(pt2diff, [graph, inputs, "--compiled", "external:/bin/false", "--overlap", overlap],
                                      os.path.join(tmp, f"dead-{overlap}.json"))
            codes[overlap] = run.returncode
        failed = ((dead["off"] or {}).get("compiles") or [{}])[0]
        check(codes["off"] == codes["on"] and codes["off"] not in (0, 1) and failed.get("ok") is False,
              f"a worker that cannot start: exit {codes['off']} without overlap, {codes['on']} with; compile failure "
              f"'{failed.get('failure')}'")
        if dead["off"] and dead["on"]:
            d = first_difference(without_measurements(dead["off"]), without_measurements(dead["on"]))
            check(d is None, "a worker that cannot start: the same report with and without overlap", d)

    if failures:
        print(f"FAILED: {len(failures)} checks")
        return 1
    print("overlapped compiles: the same reports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
