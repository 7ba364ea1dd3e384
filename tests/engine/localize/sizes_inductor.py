#!/usr/bin/env python3
"""Dynamic shapes through the real Inductor: the dynamic compile and the size sweep (docs/dynamic-shapes.md).
A ctest, label inductor.

    sizes_inductor.py PT2DIFF FIXTURES_DIR

- A tail-only bug planted in Inductor's lowering of sigmoid (wrong past the last multiple of 16 of its flattened
  result: dynamic_batch's [B, 8] is wrong at odd B only), swept with `pt2diff sizes`: every odd size has sigmoid as the
  node verdict's finding, every even size passes, the smallest failing size is 3 and is localized to sigmoid; sizes
  outside the exported range [2, 64] are refused one line each (exit 2) while the others are judged; one compile of the
  graph for the whole sweep (no recompile); JSON valid against docs/sizes.schema.json, CSV and HTML written.
  The culprit's `--repro` directory holds test_repro.py (a plain-PyTorch unit test of the window): it passes
  under the stock Inductor and fails with the planted lowering (both run).
- A bug that lives only in the dynamic compile (the last row wrong when the size is symbolic), swept from Python
  (pt2diff.sweep_sizes): every size fails at sigmoid, and the static compile at one size passes (static_check).
- Clean: decoder_seq (a decoder block, sequence length dynamic) and conv_batch (a conv net, batch dynamic) agree with
  the stock Inductor at every default size, compiled dynamic.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from report_checks import Checks  # noqa: E402
BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")
DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")


def planted(where):
    env = dict(os.environ, PT2DIFF_PLANT_OP="sigmoid", PT2DIFF_PLANT_WHERE=where, PT2DIFF_PLANT_ERROR="0.01")
    return env, f"external:{sys.executable} {BUG_WORKER}"


def validate(checks, sweep):
    """The sweep against docs/sizes.schema.json, its shapes against report.schema.json's shape_compile and each
    localized run against report.schema.json (nothing without jsonschema)."""
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(sweep, json.load(open(os.path.join(ROOT, "docs", "sizes.schema.json"))))
    report = json.load(open(os.path.join(ROOT, "docs", "report.schema.json")))
    if sweep["shapes"] is not None:
        jsonschema.validate(sweep["shapes"], {"$defs": report["$defs"], "$ref": "#/$defs/shape_compile"})
    for r in sweep["localized"]:
        checks.validate(r)


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        # 1. The tail-only bug, swept by the CLI; 1 and 65 are outside the exported range [2, 64].
        env, compiled = planted("tail:16")
        out = {k: os.path.join(tmp, "tail." + k) for k in ("json", "csv", "html")}
        sizes = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65]
        p = subprocess.run([pt2diff, "sizes", os.path.join(fixtures, "dynamic_batch.pt2"), "--dim",
                            "s77=" + ",".join(map(str, sizes)), "--compiled", compiled, "--device", DEVICE,
                            "--json", out["json"], "--csv", out["csv"], "--html", out["html"], "--repro", os.path.join(tmp, "repro")],
                           capture_output=True, text=True, env=env)
        expect(p.returncode == 2, f"refused sizes make exit 2 after the others are judged ({p.returncode}): {p.stderr[-300:]}")
        refused_lines = [ln for ln in p.stderr.splitlines() if "refused" in ln]
        expect(len(refused_lines) == 2 and all("outside the range [2, 64]" in ln for ln in refused_lines),
               f"one line per refused size, naming the range: {refused_lines}")
        s = json.load(open(out["json"])) if os.path.exists(out["json"]) else None
        expect(s is not None, "the sweep's JSON is written")
        if s is not None:
            validate(checks, s)
            points = {q["size"]: q for q in s["points"]}
            expect(sorted(points) == sizes, f"a row per size asked: {sorted(points)}")
            expect(not points[1]["judged"] and not points[65]["judged"], "1 and 65 are refused")
            judged = [q for q in s["points"] if q["judged"]]
            odd = [q["size"] for q in judged if q["size"] % 2]
            flagged = [q["size"] for q in judged if q["level"] != "pass" and q["node"] == "sigmoid"]
            clean = [q["size"] for q in judged if q["level"] == "pass"]
            expect(flagged == odd, f"sigmoid stands out at every odd size and only there: {flagged} (odd: {odd})")
            expect(clean == [q["size"] for q in judged if q["size"] % 2 == 0], f"every even size passes: {clean}")
            failing = [q["size"] for q in judged if q["fails"]]
            expect(failing and failing[0] == 3 and all(v % 2 for v in failing), f"the smallest failing size is 3: {failing}")
            expect(points[3]["culprit"] == "sigmoid" and len(s["localized"]) == 1,
                   f"localized at the smallest failing size to sigmoid: {points[3]['culprit']!r}")
            shapes = s["shapes"] or {}
            expect(shapes.get("mode") == "dynamic" and [(d["input"], d["min"], d["max"]) for d in shapes.get("symbols", [])]
                   == [("x.size(0)", 2, 64)], f"compiled dynamic, x.size(0) in [2, 64]: {shapes}")
            expect(s["recompiles"] == 0 and all(q["recompiles"] == 0 for q in judged),
                   f"one compile of the graph serves every size (recompiles {s['recompiles']})")
            expect(s["compiles"] <= 10, f"compiles for the whole sweep, localization included: {s['compiles']}")
            rows = list(csv.DictReader(io.StringIO(open(out["csv"]).read()))) if os.path.exists(out["csv"]) else []
            expect(len(rows) == len(sizes) and rows[2]["size"] == "3" and rows[2]["culprit"] == "sigmoid", f"CSV rows: {len(rows)}")
            html = open(out["html"]).read() if os.path.exists(out["html"]) else ""
            expect("<svg" in html and "s77=3 fails" in html, "the HTML page plots the sweep, failing sizes marked")
            print(f"     tail bug: failing sizes {failing}, flagged {flagged}, {s['compiles']} compiles, {s['seconds']:.1f} s")
            # The culprit as a PyTorch unit test (issue 58): fails under the planted compiler, passes under the stock one.
            repro = (s["localized"][0]["localization"] or {}).get("repro") or {} if s["localized"] else {}
            test = repro.get("test", "")
            expect(test.endswith("test_repro.py") and os.path.exists(test), f"--repro wrote test_repro.py: {repro}")
            if test:
                stock = subprocess.run([sys.executable, test], capture_output=True, text=True, cwd=tmp)
                bug = subprocess.run([sys.executable, "-c", "import runpy, sys; sys.path.insert(0, sys.argv[1]); import planted_lowering; "
                                      "planted_lowering.plant(); sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')",
                                      HERE, test], capture_output=True, text=True, cwd=tmp,
                                     env=dict(env, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1"))
                expect(stock.returncode == 0 and "OK" in stock.stderr, f"test_repro.py passes under the stock Inductor: {stock.stderr[-300:]}")
                expect(bug.returncode != 0 and "FAILED" in bug.stderr, f"test_repro.py fails under the planted lowering: {bug.stderr[-300:]}")

        # 2. The bug only a dynamic compile has, from Python: the static compile at one size passes.
        env, compiled = planted("dynamic")
        code = ("import json, sys, pt2diff\n"
                "s = pt2diff.sweep_sizes(sys.argv[1], dims={'s77': [2, 3, 17]}, compiled=sys.argv[2], device=sys.argv[3],"
                " localize=False)\n"
                "print(json.dumps({'failing': s.failing_sizes(), 'nodes': [p.node for p in s.points],"
                " 'check': s.static_check.summary, 'differ': s.static_check.differ,"
                " 'levels': [s.static_check.static_level, s.static_check.dynamic_level]}))\n")
        q = subprocess.run([sys.executable, "-c", code, os.path.join(fixtures, "dynamic_batch.pt2"), compiled, DEVICE],
                           capture_output=True, text=True, env=env)
        got = json.loads(q.stdout.strip().splitlines()[-1]) if q.returncode == 0 and q.stdout.strip() else None
        expect(got is not None, f"pt2diff.sweep_sizes ran ({q.returncode}): {q.stderr[-300:]}")
        if got is not None:
            expect(got["failing"] == [2, 3] and got["nodes"] == ["sigmoid"] * 3,
                   f"the dynamic-only bug: sizes 2 and 3 fail, sigmoid stands out at every size: {got}")
            expect(got["differ"] and got["levels"] == ["pass", "fail"] and "--static avoids it" in got["check"],
                   f"static against dynamic names the dynamic compile: {got['check']}")

        # 3. Clean dynamic graphs agree at every default size.
        for name, symbol in (("decoder_seq", "x.size(1)"), ("conv_batch", "x.size(0)")):
            path = os.path.join(tmp, name + ".json")
            p = subprocess.run([pt2diff, "sizes", os.path.join(fixtures, "dynamic", name + ".pt2"),
                                os.path.join(fixtures, "dynamic", name + "_inputs.pt"), "--device", DEVICE, "--json", path],
                               capture_output=True, text=True)
            s = json.load(open(path)) if os.path.exists(path) else None
            expect(p.returncode == 0 and s is not None, f"{name}: every size agrees ({p.returncode}): {p.stdout[-400:]} {p.stderr[-200:]}")
            if s is None:
                continue
            validate(checks, s)
            levels = {q["size"]: q["level"] for q in s["points"]}
            expect(len(levels) >= 10 and set(levels.values()) == {"pass"}, f"{name}: {levels}")
            shapes = s["shapes"] or {}
            expect(shapes.get("mode") == "dynamic" and any(d["input"] == symbol for d in shapes.get("symbols", [])),
                   f"{name}: compiled dynamic in {symbol}: {shapes.get('mode')} {shapes.get('why_static')}")
            kept_max = next((d["max"] for d in shapes.get("symbols", []) if d["input"] == symbol), None)
            past = [q for q in s["points"] if kept_max is not None and q["size"] > kept_max]
            expect(all(q["recompiles"] > 0 for q in past) and (not shapes.get("note") or past),
                   f"{name}: sizes past the range the compile kept ({kept_max}) recompile, and only they: "
                   f"{[(q['size'], q['recompiles']) for q in s['points'] if q['recompiles']]}")
            print(f"     {name}: {len(levels)} sizes agree, {s['compiles']} compiles, {s['recompiles']} recompiles"
                  f"{' (' + shapes['note'][:90] + '...)' if shapes.get('note') else ''}, {s['seconds']:.1f} s")
    return checks.finish("dynamic compiles and size sweeps judged through Inductor")


if __name__ == "__main__":
    sys.exit(main())
