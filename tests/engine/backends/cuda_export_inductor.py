#!/usr/bin/env python3
"""A graph exported on a GPU meets the Inductor worker (tests, run by ctest).

    cuda_export_inductor.py PT2DIFF FIXTURES_DIR

- By default pt2diff runs on the device the graph was exported on (cuda:0) when this machine has it.
  Where pt2diff's torch has no CUDA, the default is the CPU (the report says the graph was exported on
  cuda:0 and what runs differently), and an explicit --device cuda is one clear line naming the remedy
  and exit code 2, before anything runs.
- With --device cpu the worker loads the GPU archive on the CPU (weights, sample inputs and baked
  devices moved, fused attention as math attention) and Inductor's result is as close to CUDA eager
  as pt2diff's CPU eager is: its RMSE to the float64 module within 2x CUDA eager's (same()'s fp32
  multiplier), on the plain and the masked attention.
- The exploded compile of the bf16 GPU export (cuDNN attention) asks only for what the graph reads or
  returns: every op's output gets a compiled local error, the parts nothing reads (attention's unset
  logsumexp and RNG state) none.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def main():
    pt2diff, fixtures = sys.argv[1], os.path.join(sys.argv[2], "cuda")
    failures = []
    graph = os.path.join(fixtures, "attention_cuda_fp32.pt2")
    inputs = os.path.join(fixtures, "attention_cuda_fp32_inputs.pt")
    if not torch.cuda.is_available():
        run = subprocess.run([pt2diff, graph, inputs, "--device", "cuda"], capture_output=True, text=True)
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        if run.returncode != 2 or len(lines) != 1 or "sees no CUDA device" not in lines[0] or "--device cpu" not in lines[0]:
            failures.append(f"--device cuda without a GPU: exit {run.returncode}, stderr {run.stderr!r}")
        run = subprocess.run([pt2diff, graph, inputs], capture_output=True, text=True)
        if run.returncode != 0 or "compiled = inductor (cpu)" not in run.stdout or \
                "warning: the graph was exported on cuda:0" not in run.stdout:
            failures.append(f"default device without a GPU: exit {run.returncode}; the report does not say what ran where:\n"
                            f"{run.stdout}\n{run.stderr}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("attention_cuda_fp32", "attention_cuda_masked_fp32"):
            saved = os.path.join(tmp, name + ".pt")
            run = subprocess.run([pt2diff, os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, name + "_inputs.pt"),
                                  "--device", "cpu", "--save-outputs", saved], capture_output=True, text=True)
            if run.returncode != 0 or "AGREE" not in run.stdout or "FAILED" in run.stdout:
                failures.append(f"{name} --device cpu: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
                continue
            (compiled,), _, _ = torch.load(saved, weights_only=True)
            (cuda,) = torch.load(os.path.join(fixtures, name + "_cuda_expected.pt"), weights_only=True)
            (truth,) = torch.load(os.path.join(fixtures, name + "_fp64_expected.pt"), weights_only=True)
            ratio = rmse(compiled, truth) / rmse(cuda, truth)
            print(f"{name}: Inductor on the CPU, RMSE to fp64 {rmse(compiled, truth):.3e} = {ratio:.2f}x CUDA eager's")
            if ratio > 2.0:
                failures.append(f"{name}: Inductor on the CPU is {ratio:.2f}x farther from fp64 than CUDA eager")
        name = "attention_cuda_bf16"
        report = os.path.join(tmp, "report.json")
        run = subprocess.run([pt2diff, os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, name + "_inputs.pt"),
                              "--device", "cpu", "--json", report], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{name} --device cpu: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
        else:
            r = json.load(open(report))
            compiles = [(k["what"], k["ok"]) for k in r["compiles"]]
            values = [v for n in r["nodes"] for v in n["values"]]
            unread = [v["name"] for v in values if "_unused_" in v["name"] or not v["compared"]]
            measured = {v["name"] for v in values if v.get("compiled_local")}
            print(f"{name}: compiles {compiles}; {len(measured)} of {len(values)} values measured, unread parts {unread}")
            if compiles != [("graph", True), ("exploded", True)]:
                failures.append(f"{name}: compiles {compiles}")
            if measured != {v["name"] for v in values} - set(unread):
                failures.append(f"{name}: compiled local errors for {sorted(measured)}, unread parts {unread}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("GPU exports compile for the CPU")


if __name__ == "__main__":
    main()
