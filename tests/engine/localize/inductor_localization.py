#!/usr/bin/env python3
"""Localization with the real Inductor and a real compiler bug (a ctest; ~1-2 min).

    inductor_localization.py PT2DIFF FIXTURES_DIR NAME...

The compiled side is tests/engine/localize/lowp_matmul_worker.py: Inductor with a post-grad pass that
computes float32 matrix products in bfloat16. For each fixture pt2diff must report a divergence, localize
it to a single op that is a matrix product, and that op must be the first one of the failing cone (the
earliest place the bug can show), within the compile budget. With PT2DIFF_TEST_DEVICE=cuda
(scripts/gpu_test.sh) the compiled side runs on the GPU (`--device cuda`); the checks that judge CPU
eager bit for bit against the compiler (bf16_block at tol 0, dropout's random stream) are CPU-only.
"""
import json
import os
import subprocess
import sys
import tempfile

MATMUL_OPS = {"aten.linear.default", "aten.addmm.default", "aten.mm.default", "aten.bmm.default", "aten.matmul.default"}


def main():
    pt2diff, fixtures, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lowp_matmul_worker.py")
    device = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            base = name[:-5] if name.endswith("_core") else name
            report = os.path.join(tmp, name + ".json")
            run = subprocess.run([pt2diff, os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, base + "_inputs.pt"),
                                  "--compiled", f"external:{sys.executable} {worker}", "--device", device, "--json", report],
                                 capture_output=True, text=True)
            if run.returncode != 1:
                print(f"{name}: expected exit 1 (diverged), got {run.returncode}: {run.stderr.strip()}")
                failures += 1
                continue
            r = json.load(open(report))
            loc = r["localization"]
            culprit = loc["culprit"]
            first_matmul = next(n["name"] for n in r["nodes"] if n["op"] in MATMUL_OPS)
            ok = culprit["kind"] == "single_op" and culprit["nodes"] == [first_matmul] and loc["compiles"] <= loc["budget"]
            print(f"{name}: {culprit['kind']} {culprit['nodes']} ({culprit['ops']}) after {loc['compiles']} compiles "
                  f"(budget {loc['budget']}, cone {loc['cone_size']}), localization {loc['seconds']:.1f} s, "
                  f"whole run {r['seconds']:.1f} s; first matmul is {first_matmul}: {'ok' if ok else 'WRONG'}")
            findings = {h["kind"]: h["finding"] for h in loc["hints"]}
            hinted = findings.get("dtype_promotion") == "lower_precision_than_promotion" and \
                findings.get("compiler_lever") == "lever_does_not_remove_divergence"
            print(f"{name}: hints {findings}: {'ok' if hinted else 'WRONG'}")
            failures += (0 if ok else 1) + (0 if hinted else 1)
        if device != "cpu":
            print("FAILED" if failures else "every planted Inductor bug localized")
            return 1 if failures else 0
        # A real bf16 graph under the real Inductor, judged bit for bit (tol 0, multiplier 0): fused
        # kernels keep fp32 between bf16 ops, which the hints must say and the lever must confirm.
        report = os.path.join(tmp, "bf16_block_strict.json")
        subprocess.run([pt2diff, os.path.join(fixtures, "bf16_block.pt2"), os.path.join(fixtures, "bf16_block_inputs.pt"),
                        "--tol", "0", "--low-precision-multiplier", "0", "--json", report], capture_output=True, text=True)
        loc = json.load(open(report))["localization"]
        findings = {h["kind"]: h["finding"] for h in (loc or {}).get("hints", [])}
        ok = findings.get("dtype_promotion") == "compiled_keeps_higher_precision" and \
            findings.get("compiler_lever") == "lever_removes_divergence"
        print(f"bf16_block (strict rule): culprit {loc and loc['culprit']['nodes']}, hints {findings}: {'ok' if ok else 'WRONG'}")
        failures += 0 if ok else 1
        # Random ops: Inductor draws another stream. Seeded alike, the dropout op alone is judged,
        # and the fallback_random lever must be named; with it the whole graph agrees.
        report = os.path.join(tmp, "dropout.json")
        subprocess.run([pt2diff, os.path.join(fixtures, "dropout.pt2"), os.path.join(fixtures, "dropout_inputs.pt"), "--json", report],
                       capture_output=True, text=True)
        loc = json.load(open(report))["localization"]
        lever = next((h for h in loc["hints"] if h["kind"] == "compiler_lever"), {})
        ok = loc["culprit"]["nodes"] == ["dropout"] and lever.get("finding") == "lever_removes_divergence" and \
            "fallback_random" in lever.get("summary", "")
        print(f"dropout: {loc['culprit']['kind']} {loc['culprit']['nodes']}, lever: {lever.get('summary', '-')[:70]}: {'ok' if ok else 'WRONG'}")
        failures += 0 if ok else 1
        run = subprocess.run([pt2diff, os.path.join(fixtures, "dropout.pt2"), os.path.join(fixtures, "dropout_inputs.pt"),
                              "--inductor-config", "fallback_random=True"], capture_output=True, text=True)
        print(f"dropout with fallback_random=True: exit {run.returncode}: {'ok' if run.returncode == 0 else 'WRONG'}")
        failures += 0 if run.returncode == 0 else 1
    print("FAILED" if failures else "every planted Inductor bug localized")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
