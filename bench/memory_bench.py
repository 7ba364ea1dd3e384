#!/usr/bin/env python3
"""pt2diff's peak memory against PyTorch eager's on a Llama-style decoder of a chosen size (issue 33, part 2).

    python bench/memory_bench.py PT2DIFF OUT.json [--device cpu|cuda] [--layers 16 --dim 2048 --ffn 5632
                                  --vocab 32000 --heads 16 --seq 8 --dtype bfloat16] [--runs fp64,e2e]

The decoder (RMSNorm, causal attention through scaled_dot_product_attention, SwiGLU MLP, untied embedding and
head) is built from a config with a fixed seed (no hub, no download), made in the dtype, exported on the device
and saved with its inputs (token ids, batch 1). The defaults are the ~1B-parameter model of the issue (16
layers, d=2048): 0.95 B parameters, 1.8 GiB in bf16.

Measured, each in its own process:
- PyTorch eager: the module built the same way, one forward under no_grad. On CUDA the caching allocator's
  peak (weights included); on the CPU the process's peak resident memory (VmHWM) less its resident memory
  after `import torch` (the interpreter and libraries, which the engine has too).
- pt2diff, each run in RUNS: `fp64` is the fp64 pass (`--compiled eager --no-exploded --no-localize`: the
  eager, fp64 and local runs in lockstep); `e2e` the default job against the real Inductor (caches off). From
  the report: `devices.peak_gpu_bytes` (CUDA), `devices.peak_host_bytes` (the engine process's VmHWM) and
  `devices.start_host_bytes` (its resident memory when the diff started: the program loaded), both less the
  engine's own baseline (start_host_bytes of a diff of fixtures/mlp.pt2, whose weights are a few KiB); the
  compiled side's workers are other processes and are not counted.
Writes the figures to OUT.json in bench/results/'s format (--append adds a row; bench/run.py's ren_decoder_memory renders
docs/performance.md's table from bench/results/decoder_memory.json) and prints the table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MODEL = r'''
import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class Layer(torch.nn.Module):
    def __init__(self, d, ffn, heads):
        super().__init__()
        self.heads = heads
        self.attn_norm, self.mlp_norm = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = torch.nn.Linear(d, ffn, bias=False), torch.nn.Linear(d, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.attn_norm(x)
        q, k, v = (p(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        x = x + self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(torch.nn.Module):
    def __init__(self, layers, d, ffn, heads, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Layer(d, ffn, heads) for _ in range(layers))
        self.norm, self.head = RMSNorm(d), torch.nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def build(cfg, device):
    torch.manual_seed(0)
    saved = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, cfg["dtype"]))  # made in the dtype: no float32 copy on the way
    try:
        with torch.device(device):
            m = Decoder(cfg["layers"], cfg["dim"], cfg["ffn"], cfg["heads"], cfg["vocab"])
    finally:
        torch.set_default_dtype(saved)
    with torch.no_grad():
        for p in m.parameters():  # small weights: activations stay finite through the layers in bf16
            torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else torch.nn.init.ones_(p)
    m = m.eval()
    ids = torch.randint(0, cfg["vocab"], (1, cfg["seq"]), generator=torch.Generator().manual_seed(1)).to(device)
    return m, ids
'''

EXPORT = MODEL + r'''
import json, sys
cfg, device, graph, inputs = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
m, ids = build(cfg, device)
with torch.no_grad():
    ep = torch.export.export(m, (ids,))
torch.export.save(ep, graph)
torch.save((ids.cpu(),), inputs)
print(json.dumps({"nodes": sum(1 for n in ep.graph.nodes if n.op == "call_function"),
                  "parameters": sum(p.numel() for p in m.parameters()),
                  "weight_bytes": sum(p.numel() * p.element_size() for p in m.parameters())}))
'''

EAGER = r'''
import json, sys


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1


import torch
base = status("VmRSS")
''' + MODEL + r'''
cfg, device = json.loads(sys.argv[1]), sys.argv[2]
m, ids = build(cfg, device)
if device == "cuda":
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
with torch.no_grad():
    m(ids)
out = {"host_peak_bytes": status("VmHWM"), "host_base_bytes": base}
if device == "cuda":
    torch.cuda.synchronize()
    out["gpu_peak_bytes"] = torch.cuda.max_memory_allocated()
print(json.dumps(out))
'''


def python(code, *args):
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"memory_bench.py: a child failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def pt2diff(cli, graph, inputs, device, tmp, *flags):
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.remove(report)
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    start = time.perf_counter()
    run = subprocess.run([cli, graph, inputs, "--device", device, "--json", report, *flags], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if run.returncode not in (0, 1) or not os.path.exists(report):
        return {"wall": round(wall, 2), "exit": run.returncode, "error": (run.stderr or run.stdout).strip()[-400:]}
    r = json.load(open(report))
    return {"wall": round(wall, 2), "exit": run.returncode, "verdict": r["verdict"], "level": r["level"], "devices": r["devices"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff")
    ap.add_argument("out", help="bench/results/decoder_memory.json (the format bench/run.py renders)")
    ap.add_argument("--append", action="store_true", help="add this configuration's row to OUT's rows")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--ffn", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--runs", default="fp64,e2e")
    a = ap.parse_args()
    import torch  # here: --help needs no torch
    cfg = {k: getattr(a, k) for k in ("layers", "dim", "ffn", "heads", "vocab", "seq", "dtype")}
    with tempfile.TemporaryDirectory() as tmp:
        graph, inputs = os.path.join(tmp, "decoder.pt2"), os.path.join(tmp, "decoder_inputs.pt")
        model = python(EXPORT, json.dumps(cfg), a.device, graph, inputs)
        eager = python(EAGER, json.dumps(cfg), a.device)
        runs = {}
        for name in a.runs.split(","):
            flags = {"fp64": ["--compiled", "eager", "--no-exploded", "--no-localize"], "e2e": []}[name]
            runs[name] = pt2diff(a.pt2diff, graph, inputs, a.device, tmp, *flags)
        # The engine's own baseline (libtorch and the CLI loaded): its resident memory at the start of a diff of
        # fixtures/mlp.pt2 (weights of a few KiB).
        mlp = pt2diff(a.pt2diff, os.path.join(ROOT, "fixtures", "mlp.pt2"), os.path.join(ROOT, "fixtures", "mlp_inputs.pt"), a.device, tmp,
                      "--compiled", "eager", "--no-exploded", "--no-localize")
        baseline = mlp.get("devices", {}).get("start_host_bytes", -1)
    sys.path.insert(0, HERE)
    from run import commit, machine, ren_decoder_memory  # noqa: E402  (bench/run.py: the caption's facts, the table)
    m = machine()
    if a.device == "cuda":
        m["gpu"] = torch.cuda.get_device_name()
    row = {"config": cfg, "device": a.device, "model": model, "eager": eager, "runs": runs, "engine_base_host_bytes": baseline}
    argv = ["python", "bench/memory_bench.py", "build/pt2diff", "OUT.json"] + sys.argv[3:]
    doc = {"date": time.strftime("%Y-%m-%d"), "commit": commit(), "runner": "bench/memory_bench.py", "torch": torch.__version__,
           "machine": m, "commands": [], "data": []}
    if a.append and os.path.exists(a.out):
        with open(a.out) as f:
            doc = json.load(f)
    doc["commands"].append({"argv": argv, "note": ""})
    doc["data"].append(row)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(ren_decoder_memory([row]))


if __name__ == "__main__":
    main()
