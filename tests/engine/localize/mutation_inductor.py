#!/usr/bin/env python3
"""Graphs that write in place, through the real Inductor (fixtures/mutation, fixtures/make_mutation_fixtures.py).
A ctest, label inductor.

    mutation_inductor.py PT2DIFF FIXTURES_DIR

- scatter_into_input with the stock Inductor: a real bug of torch's (2.13 on the CPU; the report says what it finds
  on others): `x.index_put_(...)` then `x.add_(x.flip(0))` leaves a wrong x. Judged as "input 'x' after the
  graph", localized to the smallest window that reproduces (index_put_ .. add_; each op alone passes), the
  aliasing hint says who writes and who reads x in between, and the lever that removes it is compiled.
- kv_cache with a bug planted in Inductor's lowering of index_put_ (the scatter it reinplaces into the cache):
  "buffer 'k_cache' after the graph" fails, localized to index_copy_.
- view_write with a bug planted in Inductor's lowering of copy_ (what it writes back into the input): localized
  to copy_, the write through a view.
- Clean: kv_cache, bn_train (train-mode batch norm: running statistics) and view_write agree with the stock Inductor.
Every report is valid against docs/report.schema.json; the HTML report names the written input.
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


def run(pt2diff, fixtures, name, tmp, *flags, plant=None):
    report, html = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".html")
    env = dict(os.environ)
    compiled = ["--compiled", "inductor"]
    if plant:
        op, arg = plant
        env.update(PT2DIFF_PLANT_OP=op, PT2DIFF_PLANT_ARG=str(arg), PT2DIFF_PLANT_ERROR="0.05")
        compiled = ["--compiled", f"external:{sys.executable} {BUG_WORKER}"]
    p = subprocess.run([pt2diff, os.path.join(fixtures, "mutation", name + ".pt2"),
                        os.path.join(fixtures, "mutation", name + "_inputs.pt"), "--json", report, "--html", html,
                        "--device", DEVICE, *compiled, *flags], capture_output=True, text=True, env=env)
    r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
    return p, r, (open(html).read() if os.path.exists(html) else "")


def output(r, name):
    return next((o for o in r["outputs"] if o["name"] == name), None)


def hint(r, kind):
    loc = r.get("localization") or {}
    return next((h for h in loc.get("hints", []) if h["kind"] == kind), None)


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        # The real bug, with the stock Inductor.
        repro = os.path.join(tmp, "scatter_repro")
        p, r, html = run(pt2diff, fixtures, "scatter_into_input", tmp, "--repro", repro)
        expect(r is not None, f"scatter_into_input ran ({p.returncode}): {p.stderr.strip()[-300:]}")
        if r is not None:
            checks.validate(r)
            x = output(r, "input 'x' after the graph")
            expect(x is not None and x.get("value") == "x" and x["role"] == "user_input_mutation of x",
                   "the written input is a result: input 'x' after the graph")
            if x is not None and not x["pass"]:
                culprit = r["localization"]["culprit"]
                expect(culprit["kind"] == "window" and culprit["nodes"] == ["index_put_", "flip", "add_"],
                       f"the smallest window that reproduces is named: {culprit['kind']} {culprit['nodes']}")
                a = hint(r, "aliasing")
                expect(a is not None and a["finding"] == "read_after_write" and "which flip reads after the write" in a["summary"],
                       f"the aliasing hint: {a and a['finding']}: {a and a['summary'][:160]}")
                lever = hint(r, "compiler_lever")
                expect(lever is not None and lever["finding"] == "lever_removes_divergence",
                       f"a lever compiled on the window removes it: {lever and lever['summary'][:120]}")
                expect("input &#39;x&#39; after the graph" in html or "input 'x' after the graph" in html,
                       "the HTML report names the written input")
                # The fused window as a PyTorch unit test: it fails under the stock Inductor, and passes with the lever
                # that removes the bug (max_fusion_size=1), set before the test runs.
                test = os.path.join(repro, "test_repro.py")
                expect(os.path.exists(test), f"test_repro.py written for the window: {r['localization'].get('repro')}")
                if os.path.exists(test):
                    q = subprocess.run([sys.executable, test], capture_output=True, text=True, cwd=tmp)
                    expect(q.returncode != 0 and "FAILED" in q.stderr, f"test_repro.py fails under the stock Inductor: {q.returncode} {q.stderr[-300:]}")
                    lever = ("import runpy, sys, torch._inductor.config as c; c.max_fusion_size = 1; sys.argv = [sys.argv[1]]; "
                             "runpy.run_path(sys.argv[0], run_name='__main__')")
                    q = subprocess.run([sys.executable, "-c", lever, test], capture_output=True, text=True, cwd=tmp)
                    expect(q.returncode == 0, f"test_repro.py passes without the bug (max_fusion_size=1): {q.returncode} {q.stderr[-300:]}")
                print(f"     (the stock Inductor's bug reproduces on this torch: {x['reason']})")
            else:
                print("     (the stock Inductor's bug does not reproduce on this torch: input 'x' agrees)")
        # Planted: the reinplaced scatter, then the write-back.
        for name, plant, result, node, finding in [
                ("kv_cache", ("index_put_", 2), "buffer 'k_cache' after the graph", "index_copy_", "scatter_written_back"),
                ("view_write", ("copy_", 1), "input 'x' after the graph", "copy_", "write_through_view")]:
            p, r, _ = run(pt2diff, fixtures, name, tmp, "--no-exploded", plant=plant)
            ok = r is not None and p.returncode == 1
            expect(ok, f"{name} with {plant[0]} planted fails ({p.returncode}): {p.stderr.strip()[-300:]}")
            if not ok:
                continue
            checks.validate(r)
            o = output(r, result)
            expect(o is not None and not o["pass"], f"{name}: {result} fails")
            culprit = r["localization"]["culprit"]
            expect(culprit["kind"] == "single_op" and culprit["nodes"] == [node],
                   f"{name}: localized to {node}: {culprit['kind']} {culprit['nodes']}")
            a = hint(r, "aliasing")
            expect(a is not None and a["finding"] == finding, f"{name}: aliasing hint {finding}: {a and a['finding']}")
        # Clean mutating graphs agree.
        for name in ("kv_cache", "bn_train", "view_write"):
            p, r, _ = run(pt2diff, fixtures, name, tmp, "--no-kernel-map")
            written = [o["name"] for o in (r or {}).get("outputs", []) if o.get("value")]
            expect(p.returncode == 0 and r is not None and r["verdict"] == "agree" and written,
                   f"{name} agrees with the stock Inductor, written results {written} ({p.returncode} {p.stderr.strip()[-200:]})")
            if r is not None:
                checks.validate(r)
    return checks.finish("mutating graphs judged and localized through Inductor")


if __name__ == "__main__":
    sys.exit(main())
