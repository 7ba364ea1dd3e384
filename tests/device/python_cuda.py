#!/usr/bin/env python3
"""On a CUDA machine: pt2diff from Python where the model lives (docs/python.md, "On a GPU").

    PYTHONPATH=BUILD/python python tests/device/python_cuda.py BUILD/pt2diff

A bf16 decoder (RMSNorm, causal SDPA, a gated MLP) built on cuda, its token ids on cuda:
- pt2diff.diff(model, (ids,)) with the real Inductor agrees, and the report says the eager runs were on
  cuda:0 (``devices``) without device= being given: the run follows the tensors;
- the same graph through the CLI (archive and inputs written here) agrees too: both wall times printed, each
  run compiling cold (its own Inductor and Triton caches);
- a planted fault (``compiled="fault:linear#K:scale=0.5"``, the engine's eager with one wrong linear) fails
  and localization names that linear's node;
- pt2diff.testing.assert_agrees passes on the clean model;
- inputs on the CPU for a model on the GPU, and an ExportedProgram given inputs on two devices: one
  BadInputsError each, naming the input and the remedy.
Prints one line per check and, last, "python on cuda: ok" (exit 0) or "python on cuda: FAILED" (exit 1).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

import pt2diff
from models_cuda import seeded_decoder
from pt2diff.testing import assert_agrees


failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{what}: {'ok' if ok else 'WRONG'}", flush=True)


def main():
    cli = sys.argv[1]
    assert torch.cuda.is_available(), "needs a CUDA device"
    model, ids = seeded_decoder()

    # Each of the two timed runs (in memory, then the CLI) compiles cold: its own Inductor and Triton caches.
    caches = tempfile.TemporaryDirectory()
    os.environ["TRITON_CACHE_DIR"] = os.path.join(caches.name, "triton-in-memory")
    start = time.monotonic()
    r = pt2diff.diff(model, (ids,), compiled="inductor", inductor_cache=os.path.join(caches.name, "in-memory"))
    in_memory = time.monotonic() - start
    compiles = ", ".join(f"{c.what} {c.get('compile_seconds', 0):.1f} s" for c in r.compiles)
    check(r.agrees and r.verdict == "agree" and r.devices.native == "cuda:0",
          f"pt2diff.diff(model on cuda, ids on cuda): {r.verdict}, level {r.level}, eager runs on {r.devices.native}, "
          f"fp64 on {r.devices.reference}, node verdict {r.node_verdict.level} (worst {r.node_verdict.worst_ratio:.3g}x), "
          f"{in_memory:.1f} s (compiles: {compiles})")

    with tempfile.TemporaryDirectory() as tmp:
        archive, inputs, report = (os.path.join(tmp, n) for n in ("decoder.pt2", "decoder_inputs.pt", "decoder.json"))
        ep = torch.export.export(model, (ids,))
        torch.export.save(ep, archive)
        torch.save((ids,), inputs)
        os.environ["TRITON_CACHE_DIR"] = os.path.join(caches.name, "triton-cli")
        start = time.monotonic()
        run = subprocess.run([cli, archive, inputs, "--json", report, "--inductor-cache", os.path.join(caches.name, "cli")],
                             capture_output=True, text=True)
        cli_seconds = time.monotonic() - start
        rep = json.load(open(report)) if os.path.exists(report) else {}
        cli_compiles = ", ".join(f"{c['what']} {c.get('compile_seconds', 0):.1f} s" for c in rep.get("compiles", []))
        check(run.returncode == 0 and rep.get("verdict") == "agree" and rep.get("devices", {}).get("native") == "cuda:0",
              f"the CLI on the same graph: exit {run.returncode}, {rep.get('verdict')}, eager runs on "
              f"{rep.get('devices', {}).get('native')}, {cli_seconds:.1f} s (compiles: "
              f"{cli_compiles}; in memory {in_memory:.1f} s) {run.stderr.strip()[-300:]}")

        # The planted fault: the fourth linear (the first block's gate) 50% off.
        linears = [n.name for n in ep.graph.nodes if n.op == "call_function" and n.target == torch.ops.aten.linear.default]
        r = pt2diff.diff(ep, (ids,), compiled="fault:linear#4:scale=0.5")
        culprit = r.culprit.nodes if r.culprit is not None else None
        check(not r.agrees and r.verdict == "diverged" and culprit == [linears[3]] and r.devices.native == "cuda:0",
              f"a planted fault at {linears[3]}: {r.verdict}, culprit {culprit} on {r.devices.native}")

    try:
        assert_agrees(model, (ids,))
        check(True, "pt2diff.testing.assert_agrees(model on cuda, (ids,)) passes")
    except AssertionError as e:
        check(False, f"pt2diff.testing.assert_agrees(model on cuda, (ids,)) raised {str(e)[:300]}")

    try:
        pt2diff.diff(model, (ids.cpu(),), compiled="eager")
        check(False, "ids on the CPU for a model on cuda: no error")
    except pt2diff.BadInputsError as e:
        check("input 'ids' is on cpu but the module's weights are on cuda:0" in str(e), f"ids on the CPU, model on cuda: {e}")

    class Add(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    two = torch.export.export(Add(), (torch.randn(4), torch.randn(4)))
    try:
        pt2diff.diff(two, (torch.randn(4, device="cuda"), torch.randn(4)), compiled="eager")
        check(False, "inputs on two devices: no error")
    except pt2diff.BadInputsError as e:
        check("input 'y' is on cpu but input 'x' is on cuda:0" in str(e), f"inputs on two devices: {e}")

    caches.cleanup()
    print(f"python on cuda: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
