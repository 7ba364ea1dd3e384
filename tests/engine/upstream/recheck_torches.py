#!/usr/bin/env python3
"""`pt2diff recheck` over real torch installations (docs/upstream.md). A ctest, labels inductor and torch2 (not quick).

    recheck_torches.py PT2DIFF FIXTURES_DIR

The second torch: $PT2DIFF_SECOND_TORCH (the Python of any torch 2.11-2.14 other than the build's), else
torch 2.14.1 from the package registry into a cached venv (scripts/torch_venv.sh: 69 s cold on the 2-core machine,
then 3 s). Beside the build's torch (2.13) it plays the good release; the bad one is the build's torch with a bug
planted in Inductor's lowering of sigmoid (double_site/sitecustomize.py: a wrapper Python, as a release with that
lowering bug would be). Bad installations are real or doubles: a Python without torch (a venv of the base
interpreter), a torch reporting 2.9.1, a torch whose torch.export.load refuses the archive.

- The table on fixtures/dynamic_batch.pt2: the two stock torches pass, the planted one fails with sigmoid named, its
  compiled local error at the culprit over 100x eager's; every bad installation is one row and one stderr line, the
  other torches still run (exit 2); the regression between the good and the bad torch names sigmoid, the one node whose
  compiled local error changed, and the first diverging op; JSON valid against docs/recheck.schema.json.
- The culprit's repro directory, rechecked with --bisect-versions over [2.13, second, planted]: the first bad torch is
  the planted one; its test_repro.py passes under the second torch (a plain-PyTorch unit test on another release) and
  fails under the planted one; the repro's compiler artifacts (Inductor's debug trace of the window) come from the
  compiler under test: its output_code.py holds the planted scale.
PT2DIFF_TEST_DEVICE=cuda runs it all on the GPU (scripts/gpu_test.sh part 9, the second torch being the build's own).
- A batch summary with an agreeing and a diverging case: only the diverging one is rechecked.
- pt2diff.recheck from Python, bisecting over the build's torch and the planted one.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from report_checks import Checks  # noqa: E402
DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")


def second_torch():
    """The Python of the second torch, and how long getting it took."""
    t0 = time.monotonic()
    given = os.environ.get("PT2DIFF_SECOND_TORCH")
    if given:
        return given, 0.0
    p = subprocess.run([os.path.join(ROOT, "scripts", "torch_venv.sh"), "2.14.1"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"recheck_torches.py: cannot install the second torch (scripts/torch_venv.sh 2.14.1): {p.stderr[-600:]}\n"
                 "set PT2DIFF_SECOND_TORCH to the Python of a torch 2.11-2.14 other than the build's")
    return p.stdout.strip().splitlines()[-1], time.monotonic() - t0


def wrapper(folder, name, base, **env):
    """An executable standing in for a Python: `base` with double_site first on its path and `env` set."""
    path = os.path.join(folder, name)
    lines = ["#!/bin/sh", f"export PYTHONPATH='{os.path.join(HERE, 'double_site')}'${{PYTHONPATH:+:$PYTHONPATH}}"]
    lines += [f"export {k}='{v}'" for k, v in env.items()]
    lines.append(f"exec '{base}' \"$@\"")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def validate(checks, doc):
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(doc, json.load(open(os.path.join(ROOT, "docs", "recheck.schema.json"))))


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect = checks.expect
    second, install_seconds = second_torch()
    def torch_of(python):
        return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    version, own = torch_of(second), torch_of(sys.executable)
    print(f"     second torch: {version} at {second} ({install_seconds:.1f} s to get it); the build's: {own}; device {DEVICE}")
    graph, inputs = os.path.join(fixtures, "dynamic_batch.pt2"), os.path.join(fixtures, "dynamic_batch_inputs.pt")
    with tempfile.TemporaryDirectory() as tmp:
        planted = wrapper(tmp, "planted", sys.executable, PT2DIFF_TORCH_DOUBLE="planted", PT2DIFF_PLANT_OP="sigmoid",
                          PT2DIFF_PLANT_ERROR="0.01")
        old = wrapper(tmp, "old", sys.executable, PT2DIFF_TORCH_DOUBLE="old", PT2DIFF_DOUBLE_VERSION="2.9.1")
        refuses = wrapper(tmp, "refuses", second, PT2DIFF_TORCH_DOUBLE="load_error")
        subprocess.run([os.path.join(sys.base_prefix, "bin", "python3"), "-m", "venv", "--without-pip", os.path.join(tmp, "notorch")], check=True)
        notorch = os.path.join(tmp, "notorch", "bin", "python")
        here = "build=" + sys.executable
        device = ["--device", DEVICE]

        # 1. The table: two good torches, a bad one, three that cannot judge.
        path = os.path.join(tmp, "recheck.json")
        p = subprocess.run([pt2diff, "recheck", graph, inputs, "--torch", here, "--torch", second, "--torch", "planted=" + planted,
                            "--torch", "none=" + notorch, "--torch", "old=" + old, "--torch", "refuses=" + refuses, "--json", path] + device,
                           capture_output=True, text=True)
        print(p.stdout)
        doc = json.load(open(path)) if os.path.exists(path) else None
        expect(p.returncode == 2 and doc is not None, f"exit 2 (torches that cannot judge) with the JSON written: {p.returncode} {p.stderr[-600:]}")
        if doc is None:
            return checks.finish("")
        validate(checks, doc)
        rows = doc["cases"][0]["rows"]
        by = {r["label"] or r["version"]: r for r in rows}
        expect([r["level"] for r in rows] == ["pass", "pass", "fail", "unusable", "unusable", "unusable"],
               f"levels in order: {[r['level'] for r in rows]}")
        expect(rows[1]["version"] == version and rows[0]["version"] == own, f"versions read: {[r['version'] for r in rows]}")
        bad = by.get("planted", {})
        expect(bad.get("culprit") == "sigmoid" and bad.get("culprit_op") == "aten.sigmoid.default" and bad.get("culprit_ratio", 0) > 100,
               f"planted: sigmoid named, compiled local error at it over 100x eager's: {bad.get('culprit')} {bad.get('culprit_ratio')}")
        expect("cannot import torch" in by.get("none", {}).get("problem", ""), f"no torch: {by.get('none', {}).get('problem')}")
        expect("2.9.1" in by.get("old", {}).get("problem", "") and "2.11 to 2.14" in by["old"]["problem"], f"old: {by.get('old', {}).get('problem')}")
        expect("schema version" in by.get("refuses", {}).get("problem", ""), f"archive refused: {by.get('refuses', {}).get('problem')}")
        lines = [l for l in p.stderr.splitlines() if l.startswith("pt2diff: ")]
        expect(len(lines) == 3 and all(l.split(":")[1].strip() in ("none", "old", "refuses") for l in lines), f"one stderr line each: {lines}")
        regressions = doc["cases"][0]["regressions"]
        expect(len(regressions) == 1 and regressions[0]["good"] == 1 and regressions[0]["bad"] == 2 and not regressions[0]["fixed"],
               f"one regression, second -> planted: {[(g['good'], g['bad'], g['fixed']) for g in regressions]}")
        if regressions:
            g = regressions[0]
            expect([c["node"] for c in g["changed"]] == ["sigmoid"] and g["changed"][0]["factor"] > 100,
                   f"the changed node is sigmoid alone: {[(c['node'], c['factor']) for c in g['changed']]}")
            expect(g["first_diverging"].startswith("sigmoid (aten.sigmoid.default) at "), f"first diverging op: {g['first_diverging']}")

        # 2. The culprit's repro directory, bisected over three releases in order.
        repro = os.path.join(tmp, "repro")
        path = os.path.join(tmp, "planted.json")
        p = subprocess.run([pt2diff, graph, inputs, "--worker-python", planted, "--repro", repro, "--json", path] + device, capture_output=True, text=True)
        expect(p.returncode == 1 and os.path.exists(os.path.join(repro, "repro.pt2")), f"repro written under the planted torch: {p.returncode} {p.stderr[-300:]}")
        # The compiler's own files for the window come from the compiler under test: the planted scale is in its code.
        report = json.load(open(path)) if os.path.exists(path) else {}
        checks.validate(report)
        written = (report.get("localization") or {}).get("repro") or {}
        made = {a["what"]: a["path"] for a in written.get("artifacts") or []}
        if DEVICE == "cpu":
            expect({"post_grad_graph", "output_code", "ir_post_fusion"} <= set(made), f"the compiler's artifacts listed: {sorted(made)}")
            code = open(made["output_code"]).read() if "output_code" in made else ""
            graph_code = open(made["post_grad_graph"]).read() if "post_grad_graph" in made else ""
            expect("1.01" in code and "sigmoid" in graph_code,
                   f"output_code.py holds the planted lowering (x 1.01), the post-grad graph the sigmoid: {len(code)} {len(graph_code)} chars")
        else:  # a CPU export diffed on the GPU: its window is a CPU one, whose compile is not the one that went wrong
            expect(not made and "export the model on" in written.get("artifacts_message", ""),
                   f"no artifacts from a CPU compile of the window: {written.get('artifacts_message')}")
        path = os.path.join(tmp, "bisect.json")
        p = subprocess.run([pt2diff, "recheck", repro, "--torch", here, "--torch", second, "--torch", "planted=" + planted, "--bisect-versions",
                            "--json", path] + device, capture_output=True, text=True)
        print(p.stdout)
        doc = json.load(open(path)) if os.path.exists(path) else {"cases": [{}]}
        b = doc["cases"][0].get("bisection") or {}
        expect(p.returncode == 1 and b.get("first_bad") == 2 and b.get("runs") == 3, f"first bad torch: the planted one, 3 runs: {p.returncode} {b}")
        expect(doc["cases"][0].get("graph", "").endswith("repro.pt2") and doc["cases"][0].get("inputs", "").endswith("repro_inputs.pt"),
               f"the repro's archive and inputs: {doc['cases'][0].get('graph')} {doc['cases'][0].get('inputs')}")
        test = os.path.join(repro, "test_repro.py")
        if os.path.exists(test):
            p = subprocess.run([second, test], capture_output=True, text=True, cwd=tmp)
            expect(p.returncode == 0, f"test_repro.py passes under torch {version}: {p.stderr[-400:]}")
            p = subprocess.run([planted, test], capture_output=True, text=True, cwd=tmp)
            expect(p.returncode != 0 and "FAILED" in p.stderr, f"test_repro.py fails under the planted torch: {p.returncode} {p.stderr[-300:]}")

        # 3. A batch summary: only the case that did not agree is rechecked.
        summary = os.path.join(tmp, "summary.json")
        json.dump({"format": "pt2diff-batch summary 1", "cases": [
            {"case": "clean", "graph": os.path.join(fixtures, "mlp.pt2"), "inputs": os.path.join(fixtures, "mlp_inputs.pt"), "verdict": "agree", "level": "pass"},
            {"case": "bug", "graph": "repro/repro.pt2", "inputs": "repro/repro_inputs.pt", "verdict": "diverged", "level": "fail"}]}, open(summary, "w"))
        path = os.path.join(tmp, "summary_recheck.json")
        p = subprocess.run([pt2diff, "recheck", summary, "--torch", second, "--json", path] + device, capture_output=True, text=True)
        doc = json.load(open(path)) if os.path.exists(path) else {"cases": []}
        expect(p.returncode == 0 and [c["graph"] for c in doc["cases"]] == [os.path.join(tmp, "repro", "repro.pt2")]
               and doc["cases"][0]["rows"][0]["level"] == "pass",
               f"the diverged case alone, passing under torch {version}: {p.returncode} {[c['graph'] for c in doc['cases']]} {p.stderr[-300:]}")

        # 4. From Python: pt2diff.recheck, bisecting over the build's torch and the planted one.
        import pt2diff as pd
        import torch
        r = pd.recheck(graph, torch.load(inputs, weights_only=True), torches={"build": sys.executable, "planted": planted}, bisect=True, device=DEVICE)
        bad = r.first_bad()
        expect(bad is not None and bad.label == "planted" and bad.culprit == "sigmoid" and r.bisection.runs == 2
               and "first bad torch: planted" in r.to_text(),
               f"pt2diff.recheck names the planted torch and sigmoid: {bad and bad.label} {bad and bad.culprit} {r.bisection}")
        validate(checks, json.loads(r.to_json()))
    return checks.finish("recheck judged the graph through other torch installations")


if __name__ == "__main__":
    sys.exit(main())
