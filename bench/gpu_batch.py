#!/usr/bin/env python3
"""`pt2diff batch` over GPU cases on one GPU and on two (docs/performance.md, "Batch over GPUs").

    python bench/gpu_batch.py PT2DIFF [--cases 8]

Exports CASES models on cuda here (bf16 decoders and fp16 conv nets of different widths, each with its inputs:
tests/device/models_cuda.py's TinyDecoder and AutocastConvNet in fp16), then runs the corpus with the local pool
(--jobs CASES, real Inductor, cold Inductor cache each time) with CUDA_VISIBLE_DEVICES=0 and with every GPU
visible (one run on a machine with one GPU); prints the wall times and whether the summaries are equal but for
timings.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "device")]
from models_cuda import AutocastConvNet, TinyDecoder  # noqa: E402
from pt2diff_batch.summary import comparable  # noqa: E402


def export_corpus(folder, n):
    lines = []
    for i in range(n):
        torch.manual_seed(i)
        if i % 2 == 0:
            model = TinyDecoder(d=64 * (1 + i // 4), layers=2).to("cuda", torch.bfloat16).eval()
            args = (torch.randint(0, 512, (2, 32), device="cuda"),)
        else:
            model = AutocastConvNet().to("cuda").eval()
            args = (torch.randn(2 + i // 4, 3, 16, 16, device="cuda"),)
        ep = torch.export.export(model, args)
        graph, inputs = os.path.join(folder, f"case{i}.pt2"), os.path.join(folder, f"case{i}_inputs.pt")
        torch.export.save(ep, graph)
        torch.save(tuple(a.cpu() for a in args), inputs)
        lines.append(f"{graph}\t{inputs}\t")
    manifest = os.path.join(folder, "corpus.tsv")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    return manifest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pt2diff")
    p.add_argument("--cases", type=int, default=8)
    a = p.parse_args()
    gpus = torch.cuda.device_count()
    with tempfile.TemporaryDirectory() as tmp:
        manifest = export_corpus(tmp, a.cases)
        docs, walls = {}, {}
        runs = [("1 GPU", "0")] + ([(f"{gpus} GPUs", ",".join(map(str, range(gpus))))] if gpus > 1 else [])
        for label, visible in runs:
            out = os.path.join(tmp, label.replace(" ", ""))
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible, TRITON_CACHE_DIR=os.path.join(out, "triton"))
            start = time.monotonic()
            run = subprocess.run([a.pt2diff, "batch", manifest, "--out", out, "--jobs", str(a.cases)], capture_output=True,
                                 text=True, env=env)
            walls[label] = time.monotonic() - start
            with open(os.path.join(out, "summary.json")) as f:
                docs[label] = json.load(f)
            verdicts = [(r["verdict"], r["failure"]) for r in docs[label]["cases"]]
            used = sorted({json.load(open(os.path.join(out, "cases", r["key"], "run.json"))).get("gpu") for r in docs[label]["cases"]})
            print(f"{label}: exit {run.returncode}, {a.cases} cases in {walls[label]:.1f} s, verdicts {verdicts}, GPUs used {used}"
                  f"{'' if run.returncode == 0 else ' ' + run.stderr[-500:]}", flush=True)
        same = len({json.dumps(comparable(d), sort_keys=True) for d in docs.values()}) == 1
        print(f"summaries equal but for timings: {same}; wall " + ", ".join(f"{k} {v:.1f} s" for k, v in walls.items()))
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
