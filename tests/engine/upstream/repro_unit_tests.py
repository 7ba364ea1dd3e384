#!/usr/bin/env python3
"""The PyTorch unit test `--repro` writes (test_repro.py, docs/upstream.md) for planted Inductor bugs in a model
exported on the device it runs on. A ctest (label inductor, the fused window on the CPU) and part 9 of
scripts/gpu_test.sh (both bugs on CUDA, PT2DIFF_TEST_DEVICE=cuda).

    repro_unit_tests.py PT2DIFF

The model (`Gate`: linear, then sigmoid(h * 0.5 + 0.25) * h in fp32) is exported on the device at test time, so a
CUDA run judges a window exported there. The bug is in Inductor's lowering of sigmoid
(tests/engine/localize/planted_lowering.py), loaded by a wrapper Python (double_site/sitecustomize.py) given to
pt2diff as --worker-python, as a torch with that bug would be:
- op-level: sigmoid's result is 1% off wherever it is lowered; pt2diff names sigmoid alone;
- fused window: 1% off only when sigmoid's input is a pointwise computation fused into its kernel (PLANT_WHERE=fused);
  sigmoid compiled alone is right, so pt2diff names the window add .. sigmoid.
For each: the culprit named, the compiler's artifacts of the window written (its generated code holds the planted
scale), and test_repro.py run: under the planted torch it FAILS, under the stock torch it passes, also as a pytest
file. The op-level bug on the CPU is recheck_torches.py's; this test runs
the fused window there.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from report_checks import Checks  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))  # pt2diff_capture
sys.path.insert(0, HERE)
from recheck_torches import wrapper  # noqa: E402

DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")
CASES = [  # (name, PT2DIFF_PLANT_WHERE, culprit kind, culprit nodes)
    ("op-level", "", "single_op", ["sigmoid"]),
    ("fused window", "fused", "window", ["add", "sigmoid"]),
]


def export_gate(out):
    """Gate exported on DEVICE with pt2diff_capture.export_module: (archive, inputs)."""
    import torch
    from pt2diff_capture import export_module

    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            h = self.fc(x)
            return torch.sigmoid(h * 0.5 + 0.25) * h

    torch.manual_seed(0)
    done = export_module(Gate().to(DEVICE).eval(), (torch.randn(8, 16, device=DEVICE),), out=out)
    return done.archive, done.inputs


def main():
    pt2diff = sys.argv[1]
    checks = Checks()
    expect = checks.expect
    cases = CASES if DEVICE != "cpu" else CASES[1:]
    with tempfile.TemporaryDirectory() as tmp:
        graph, inputs = export_gate(os.path.join(tmp, "gate"))
        for name, where, kind, nodes in cases:
            planted = wrapper(tmp, f"planted{where}", sys.executable, PT2DIFF_TORCH_DOUBLE="planted", PT2DIFF_PLANT_OP="sigmoid",
                              PT2DIFF_PLANT_ERROR="0.01", PT2DIFF_PLANT_WHERE=where)
            repro, path = os.path.join(tmp, f"repro{where}"), os.path.join(tmp, f"report{where}.json")
            p = subprocess.run([pt2diff, graph, inputs, "--device", DEVICE, "--worker-python", planted, "--repro", repro,
                                "--json", path], capture_output=True, text=True)
            report = json.load(open(path)) if os.path.exists(path) else {}
            expect(p.returncode == 1 and report, f"{name}: the planted bug fails the graph: {p.returncode} {p.stderr[-400:]}")
            if not report:
                continue
            checks.validate(report)
            loc = report.get("localization") or {}
            culprit = loc.get("culprit") or {}
            expect(culprit.get("kind") == kind and culprit.get("nodes") == nodes,
                   f"{name}: the culprit is {kind} {nodes}: {culprit.get('kind')} {culprit.get('nodes')}")
            made = {a["what"]: a["path"] for a in (loc.get("repro") or {}).get("artifacts") or []}
            code = open(made["output_code"]).read() if "output_code" in made else ""
            expect({"post_grad_graph", "output_code", "ir_post_fusion"} <= set(made) and "1.01" in code,
                   f"{name}: the compiler's artifacts of the window, its generated code holding the planted scale: {sorted(made)}")
            test = os.path.join(repro, "test_repro.py")
            expect(os.path.exists(test), f"{name}: test_repro.py written: {sorted(os.listdir(repro)) if os.path.isdir(repro) else None}")
            if not os.path.exists(test):
                continue
            device_line = f"DEVICE = '{DEVICE}"  # 'cuda:0' where the export was on cuda:0
            expect(device_line in open(test).read(), f"{name}: the test runs on the device of the export ({device_line})")
            ways = [(planted, "python", True), (sys.executable, "python", False)]
            if importlib.util.find_spec("pytest"):  # collected and passing as a pytest file (its failing twin is above)
                ways.append((sys.executable, "pytest", False))
            else:
                print(f"     ({name}: no pytest in this Python: test_repro.py run with python only)")
            for python, how, fails in ways:
                command = [python, test] if how == "python" else [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
                q = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
                said = q.stdout + q.stderr
                if fails:
                    ok = q.returncode != 0 and "FAILED" in said
                    expect(ok, f"{name}: {how} test_repro.py fails under the planted torch: {q.returncode} {'' if ok else said[-400:]}")
                else:
                    ok = q.returncode == 0 and ("OK" in said or "1 passed" in said)
                    expect(ok, f"{name}: {how} test_repro.py passes under the stock torch: {q.returncode} {'' if ok else said[-400:]}")
    return checks.finish("the repro's unit tests failed with the planted bugs and passed without")


if __name__ == "__main__":
    sys.exit(main())
