#!/usr/bin/env python3
"""pt2diff on a GPU against the CPU, for docs/performance.md (run by hand on a CUDA machine).

    python bench/gpu_bench.py PT2DIFF OUT.json

Exports two graphs on the GPU with this machine's torch, each in float32 and bfloat16: a transformer
block (attention + MLP, d=512, 8 heads, batch 8 x 256 tokens) and a small real model,
torch.nn.TransformerEncoder (4 layers, d=256, 8 heads, batch 8 x 128). For each, the same archive and
inputs with `--device cuda` and `--device cpu`:
- end to end: `pt2diff G I` against the real Inductor (caches off), the whole default job;
- time to culprit: the worker with a planted lowering bug (bench/gpu_worker_bug.py: fp32 matmuls in
  bf16, bf16 matmul operands through float8), the culprit and the compiles;
- the fp64 pass: `--compiled eager --no-exploded --no-localize` (eager, fp64 and local runs in
  lockstep), fp64 on the GPU and on the CPU;
- peak GPU memory of pt2diff's engine (the caching allocator's peak, from the report) against
  PyTorch eager's own peak running the module once (the fp32/bf16 live set).
Writes every measurement to OUT.json and prints a markdown table. GPU_BENCH_ONLY="MODEL:DTYPE,..." and
GPU_BENCH_RUNS="e2e_cuda,..." limit what runs (a device's time budget).

    python bench/gpu_bench.py PT2DIFF OUT.json --limit [--models decoder,decoder_1b,encoder,decoder_7b]
                              [--runs N] [--modes limit,serial,overlap,culprit]

The physical limit on the GPU (issue 33, docs/performance.md "The limit on the GPU"): for the bf16 decoder
(memory_bench.py's Llama-style model, 4 layers, d=1024, 512 tokens), the ~1B one (16 layers, d=2048, 128
tokens) and the bf16 nn.TransformerEncoder above, each exported on the GPU:
- the limit: one Python process that imports torch, loads the archive and inputs, runs eager once, then
  torch.compile's first call (caches off) -- the least any tool that compiles the graph and compares it with
  eager pays: the time from the process's spawn to the compiled call's end (each part too; the process's
  exit, which shuts Inductor's compile workers down, is not counted), against pt2diff's whole process;
- pt2diff end to end with its compiles overlapped (`--overlap on`) and one after the other (`off`), caches
  off, the reports compared but for timings; and time to culprit with the planted lowering bug, overlapped;
- peak GPU memory: pt2diff's engine (from the report) and PyTorch eager's (the module run once); each pt2diff
  stage's time and GPU peak (the report's `stages`).
decoder_7b (Llama-2-7B's shapes, random bf16 weights, 13.5 GB) is not in the default list: its export and runs
take minutes each; `--modes overlap,culprit` runs what issue 33 asks of it.
Every figure goes to OUT.json (bench/results/gpu_limit.json) as it comes; bench/run.py renders the table.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from cli_case import without_measurements  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d=512, heads=8):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def models():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 8, dim_feedforward=1024, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    return [("transformer_block", Block(), (8, 256, 512)), ("nn.TransformerEncoder", encoder, (8, 128, 256))]


def export(name, module, shape, dtype, tmp, device="cuda"):
    cuda = device == "cuda"
    module = module.to(device, dtype).eval()
    x = torch.randn(*shape, device=device, dtype=dtype)
    with torch.no_grad():
        ep = torch.export.export(module, (x,)).run_decompositions()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() if cuda else -1
        module(x)
        if cuda:
            torch.cuda.synchronize()
        eager_peak = torch.cuda.max_memory_allocated() if cuda else -1
    graph, inputs = os.path.join(tmp, f"{name}_{dtype}.pt2".replace("torch.", "")), os.path.join(tmp, f"{name}_inputs.pt")
    torch.export.save(ep, graph)
    torch.save((x.cpu(),), inputs)
    nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    return graph, inputs, nodes, eager_peak, base


def pt2diff(cli, graph, inputs, tmp, *flags):
    report = os.path.join(tmp, "r.json")
    if os.path.exists(report):
        os.remove(report)
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    start = time.perf_counter()
    run = subprocess.run([cli, graph, inputs, "--json", report, *flags], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if run.returncode not in (0, 1):
        return {"wall": wall, "exit": run.returncode, "error": run.stderr.strip()[-300:]}
    r = json.load(open(report))
    loc = r.get("localization") or {}
    culprit = loc.get("culprit") or {}
    return {"wall": round(wall, 2), "exit": run.returncode, "verdict": r["verdict"], "seconds": r["seconds"],
            "devices": r["devices"], "compiles": len(r.get("compiles", [])), "culprit": culprit.get("ops"),
            "culprit_nodes": culprit.get("nodes"), "localize_compiles": loc.get("compiles"),
            # [compile, run, its worker's start (0: running already)] of the graph's and the exploded compile
            "compile_seconds": {c["what"]: [round(c.get("compile_seconds", 0), 2), round(c.get("run_seconds", 0), 2),
                                            round(c.get("worker_start_seconds", 0), 2)]
                                for c in r.get("compiles", [])[:2]},
            # where the time and the GPU memory went: each stage that took any, [seconds, its GPU peak in MiB]
            "stages": {st["name"]: [round(st["seconds"], 2), round(st["peak_gpu_bytes"] / 2**20) if st["peak_gpu_bytes"] >= 0 else None]
                       for st in r.get("stages", []) if st["seconds"] >= 0.05 or st["peak_gpu_bytes"] > 0}}


def save(out, rows):
    meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    with open(out, "w") as f:
        json.dump({"machine": meta, "rows": rows}, f, indent=1)


def main():
    cli, out = sys.argv[1], sys.argv[2]
    bug = f"external:{sys.executable} {os.path.join(HERE, 'gpu_worker_bug.py')}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, module, shape in models():
            for dtype in (torch.float32, torch.bfloat16):
                only = os.environ.get("GPU_BENCH_ONLY")
                if only and f"{name}:{str(dtype).replace('torch.', '')}" not in only.split(","):
                    continue
                graph, inputs, nodes, eager_peak, base = export(name, module, shape, dtype, tmp)
                row = {"model": name, "dtype": str(dtype).replace("torch.", ""), "nodes": nodes,
                       "pytorch_eager_peak_bytes": eager_peak, "weights_and_input_bytes": base}
                rows.append(row)
                eager = ("--compiled", "eager", "--no-exploded", "--no-localize")
                runs = [("e2e_cuda", ("--device", "cuda")), ("culprit_cuda", ("--device", "cuda", "--compiled", bug)),
                        ("fp64_pass_gpu", ("--device", "cuda", *eager, "--reference-device", "cuda")),
                        ("fp64_pass_cpu_reference", ("--device", "cuda", *eager, "--reference-device", "cpu")),
                        ("fp64_pass_all_cpu", ("--device", "cpu", *eager)),
                        ("e2e_cpu", ("--device", "cpu")), ("culprit_cpu", ("--device", "cpu", "--compiled", bug))]
                wanted = os.environ.get("GPU_BENCH_RUNS")
                runs = [r for r in runs if not wanted or r[0] in wanted.split(",")]
                for key, flags in runs:  # the GPU figures first; every one saved as it comes (a time limit keeps them)
                    row[key] = pt2diff(cli, graph, inputs, tmp, *flags)
                    print(key, json.dumps(row[key]), flush=True)
                    save(out, rows)
    save(out, rows)
    print(f"| model | dtype | nodes | e2e CUDA | e2e CPU | culprit CUDA (s, compiles) | culprit CPU | fp64 pass GPU | fp64 CPU ref | all CPU | peak GPU (pt2diff / eager) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        def s(k):
            v = r.get(k, {"error": "not run", "exit": "-"})
            return f"{v['wall']:.1f} s" if "error" not in v else f"exit {v['exit']}"
        def c(k):
            v = r.get(k, {"error": "not run", "exit": "-"})
            return f"{v['wall']:.1f} s, {v.get('compiles')} ({','.join(v.get('culprit') or ['-'])})" if "error" not in v else f"exit {v['exit']}"
        peak = r.get("e2e_cuda", {}).get("devices", {}).get("peak_gpu_bytes", -1)
        print(f"| {r['model']} | {r['dtype']} | {r['nodes']} | {s('e2e_cuda')} | {s('e2e_cpu')} | {c('culprit_cuda')} | {c('culprit_cpu')} | "
              f"{s('fp64_pass_gpu')} | {s('fp64_pass_cpu_reference')} | {s('fp64_pass_all_cpu')} | "
              f"{peak / 2**20:.0f} / {r['pytorch_eager_peak_bytes'] / 2**20:.0f} MiB |")


LIMIT = r'''
import json, sys, time
start = time.perf_counter()
import torch
graph, inputs, spawned = sys.argv[1], sys.argv[2], float(sys.argv[3])
t = {"start": time.time() - spawned - (time.perf_counter() - start), "import": time.perf_counter() - start}
ep = torch.export.load(graph)
args = tuple(a.cuda() for a in torch.load(inputs, weights_only=True))
m = ep.module()
torch.cuda.synchronize()
t["load"] = time.perf_counter() - start - sum(t.values())
with torch.no_grad():
    m(*args)
    torch.cuda.synchronize()
    t["eager"] = time.perf_counter() - start - sum(t.values())
    import resource  # PyTorch eager's own memory, this process's: archive loaded, the module run once
    memory = {"eager_host_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "eager_gpu_peak_bytes": torch.cuda.max_memory_allocated()}
    torch.compile(m)(*args)
    torch.cuda.synchronize()
    t["compile_and_run"] = time.perf_counter() - start - sum(t.values())
print(json.dumps({**t, **memory}))
'''

LIMIT_MODELS = {  # name: (memory_bench config or None for the encoder, tokens)
    "decoder": dict(layers=4, dim=1024, ffn=2816, heads=8, vocab=32000, seq=512, dtype="bfloat16"),
    "decoder_1b": dict(layers=16, dim=2048, ffn=5632, heads=16, vocab=32000, seq=128, dtype="bfloat16"),
    # Llama-2-7B's shapes (6.7e9 parameters, 13.5 GB in bf16), random weights: no hub
    "decoder_7b": dict(layers=32, dim=4096, ffn=11008, heads=32, vocab=32000, seq=128, dtype="bfloat16"),
    "encoder": None,
}


def export_limit_model(name, tmp, device="cuda"):
    """Exports one of LIMIT_MODELS on `device` (the GPU); returns the archive, inputs, node count, eager's peak
    GPU memory (-1 on the CPU)."""
    cfg = LIMIT_MODELS[name]
    if cfg is None:
        graph, inputs, nodes, eager_peak, _ = export("nn.TransformerEncoder", models()[1][1], (8, 128, 256), torch.bfloat16, tmp, device)
        return graph, inputs, nodes, eager_peak
    import memory_bench
    scope = {}
    exec(memory_bench.MODEL, scope)
    m, ids = scope["build"](cfg, device)
    cuda = device == "cuda"
    with torch.no_grad():
        ep = torch.export.export(m, (ids,))
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        m(ids)
        if cuda:
            torch.cuda.synchronize()
        eager_peak = torch.cuda.max_memory_allocated() if cuda else -1
    graph, inputs = os.path.join(tmp, f"{name}.pt2"), os.path.join(tmp, f"{name}_inputs.pt")
    torch.export.save(ep, graph)
    torch.save((ids.cpu(),), inputs)
    nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    del m, ep
    if cuda:
        torch.cuda.empty_cache()
    return graph, inputs, nodes, eager_peak


def limit(graph, inputs):
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", LIMIT, graph, inputs, repr(time.time())], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        return {"wall": round(wall, 2), "exit": run.returncode, "error": run.stderr.strip()[-300:]}
    parts = json.loads(run.stdout.strip().splitlines()[-1])
    memory = {k: parts.pop(k) for k in ("eager_host_peak_bytes", "eager_gpu_peak_bytes")}
    return {"wall": round(wall, 2), "parts": {k: round(v, 2) for k, v in parts.items()}, **memory}


def main_limit(cli, out, names, runs, modes):
    bug = f"external:{sys.executable} {os.path.join(HERE, 'gpu_worker_bug.py')}"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            start = time.perf_counter()
            graph, inputs, nodes, eager_peak = export_limit_model(name, tmp)
            row = {"model": name, "config": LIMIT_MODELS[name], "nodes": nodes, "pytorch_eager_peak_bytes": eager_peak,
                   "archive_bytes": os.path.getsize(graph), "export_seconds": round(time.perf_counter() - start, 1)}
            print(name, "exported", json.dumps(row), flush=True)
            rows.append(row)
            known = {"limit": ("limit", None), "serial": ("e2e_serial", ("--overlap", "off")), "overlap": ("e2e_overlap", ("--overlap", "on"))}
            kinds = [known[m] for m in modes if m in known]
            for i in range(runs):  # in --modes' order, alternately: a warm disk cache for each alike
                for key, what in kinds:
                    if what is None:
                        m = limit(graph, inputs)
                    else:
                        m = pt2diff(cli, graph, inputs, tmp, "--device", "cuda", *what)
                        if "error" not in m:
                            m["report"] = without_measurements(json.load(open(os.path.join(tmp, "r.json"))))
                    row.setdefault(key, []).append(m)
                    print(name, key, json.dumps({k: v for k, v in m.items() if k != "report"}), flush=True)
                    save(out, rows)
            if "culprit" in modes:  # after the runs of every other mode
                row["culprit_overlap"] = pt2diff(cli, graph, inputs, tmp, "--device", "cuda", "--overlap", "on", "--compiled", bug)
                print(name, "culprit_overlap", json.dumps(row["culprit_overlap"]), flush=True)
            reports = [m.pop("report", None) for k in ("e2e_serial", "e2e_overlap") for m in row.get(k, [])]
            if len(reports) > 1:
                row["reports_identical"] = all(r is not None and r == reports[0] for r in reports)
            save(out, rows)
            os.remove(graph)  # the 7B's archive is 13.5 GB: the next model's disk
    return 0


if __name__ == "__main__":
    if "--limit" in sys.argv:
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("pt2diff")
        ap.add_argument("out")
        ap.add_argument("--limit", action="store_true")
        ap.add_argument("--models", default="decoder,decoder_1b,encoder")
        ap.add_argument("--runs", type=int, default=2)
        ap.add_argument("--modes", default="limit,serial,overlap,culprit",
                        help="what runs for each model: the limit, pt2diff serial / overlapped, time to culprit (overlapped)")
        a = ap.parse_args()
        sys.exit(main_limit(a.pt2diff, a.out, a.models.split(","), a.runs, a.modes.split(",")))
    main()
