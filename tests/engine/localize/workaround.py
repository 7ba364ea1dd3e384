#!/usr/bin/env python3
"""The smallest eager set (--workaround) with the real Inductor and a bug planted in its lowering of relu
(lowering_bug_worker.py, planted_lowering.py). A ctest, label inductor.

    workaround.py PT2DIFF FIXTURES_DIR

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
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from report_checks import Checks  # noqa: E402
BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")
DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")

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


def run(pt2diff, fixtures, name, tmp, *flags, env=None):
    report = os.path.join(tmp, name + ".json")
    p = subprocess.run([pt2diff, os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, name + "_inputs.pt"),
                        "--json", report, "--workaround", "--no-exploded",
                        "--compiled", f"external:{sys.executable} {BUG_WORKER}", "--device", DEVICE, *flags],
                       capture_output=True, text=True, env={**os.environ, "PT2DIFF_PLANT_OP": "relu", **(env or {})})
    r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
    return p, r


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        # name, planted shape, the set expected, its levers (kind, module path or the start of the source line)
        cases = [("mlp", None, ["relu"], [("source_line", "make_fixtures.py:35")]),
                 ("in_place_confined", None, ["relu_", "relu__1"], [("module", "act1"), ("source_line", "make_in_place_fixture.py:36")]),
                 ("in_place_confined", "5,16", ["relu_"], [("module", "act1")])]
        for name, shape, nodes, levers in cases:
            p, r = run(pt2diff, fixtures, name, tmp, env={"PT2DIFF_PLANT_SHAPE": shape} if shape else None)
            label = name + (f" (bug at shape {shape})" if shape else "")
            if r is None:
                expect(False, f"{label}: pt2diff exited {p.returncode}: {p.stderr.strip()[-400:]}")
                continue
            checks.validate(r)
            w = r["workaround"]
            got = [n["node"] for n in w["nodes"]]
            expect(p.returncode == 1 and r["verdict"] == "diverged", f"{label}: the compiled graph diverges (exit {p.returncode})")
            expect(w["conclusion"] == "found" and w["minimal"] and w["verified"],
                   f"{label}: {w['summary']}")
            expect(got == nodes, f"{label}: eager set {got} (expected {nodes})")
            got_levers = [(l["kind"], l["module_path"] or l["source"]) for l in w["levers"]]
            expect(len(got_levers) == len(levers) and all(k == gk and gv.startswith(v) for (k, v), (gk, gv) in zip(levers, got_levers)),
                   f"{label}: levers {got_levers}")
            culprit = r["localization"]["culprit"]["nodes"] if r["localization"] else []
            if len(nodes) == 1:
                # the lever leaves eager that same set: the verification is the culprit's compile, not a second one
                expect(culprit == nodes and w["compiles"] == 1,
                       f"{label}: {w['compiles']} compile (the culprit {culprit} eager, which the verification reuses)")
            else:
                expect(culprit and culprit[0] in got and w["compiles"] <= 2 + 2 * len(nodes) * 4 + 1,
                       f"{label}: the set holds the culprit {culprit}; {w['compiles']} compiles for {w['candidates']} nodes")
            if all(kind == "module" for kind, _ in levers):
                lines = os.path.join(tmp, "lines.py")
                with open(lines, "w") as f:
                    f.write("\n".join(w["lines"]) + "\n")
                applied = subprocess.run([sys.executable, "-c", APPLY, HERE, os.path.join(fixtures, name + ".pt2"),
                                          os.path.join(fixtures, name + "_inputs.pt"), lines, DEVICE],
                                         capture_output=True, text=True,
                                         env={**os.environ, "PT2DIFF_PLANT_OP": "relu", "PT2DIFF_PLANT_SHAPE": shape or ""})
                expect(applied.returncode == 0,
                       f"{label}: the printed lines, applied to torch.export.unflatten(archive) and torch.compile'd with the bug: "
                       + (applied.stdout.strip() or applied.stderr.strip()[-600:]))
    if checks.failures:
        print(f"{len(checks.failures)} failed")
        return 1
    print("the smallest eager set is found, verified and works as printed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
