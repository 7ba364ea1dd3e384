#!/usr/bin/env python3
"""On a CUDA machine: capture on the GPU, diagnosis on the GPU and on a machine without one (docs/capture.md).

    python tests/device/capture_cuda.py BUILD/pt2diff

- pt2diff_capture's torch.compile backend on a bf16 decoder built on cuda (tests/device/models_cuda.py's
  TinyDecoder): the program's logits are eager's bit for bit, and every captured graph is diagnosed by the
  CLI with the real Inductor on cuda:0 (the export's device, the default) and, with no GPU visible
  (CUDA_VISIBLE_DEVICES=""), on the CPU: both agree;
- export_module on an fp16 conv net on cuda whose forward runs under torch.autocast("cuda", float16) (an
  autocast region in the archive): the same two diagnoses, and the region is listed by `pt2diff inspect`.
Prints one line per check and, last, "capture on cuda: ok" (exit 0) or "capture on cuda: FAILED" (exit 1).
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import pt2diff_capture  # noqa: E402
from models_cuda import TinyDecoder  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{what}: {'ok' if ok else 'WRONG'}", flush=True)


class AutocastConvNet(torch.nn.Module):
    """fp32 weights, the body under fp16 autocast: a batch-normed stem, two residual 3x3 blocks, a head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.GroupNorm(4, 16),
                                                              torch.nn.ReLU()) for _ in range(2))
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        with torch.autocast("cuda", dtype=torch.float16):
            h = self.stem(x)
            for blk in self.blocks:
                h = h + blk(h)
            return self.head(h.mean((2, 3)))


def diagnose(cli, archive, inputs, tmp, name):
    """The CLI with Inductor on the export's device, then with no GPU visible: (ok, line)."""
    parts = []
    ok = True
    for where, env in (("gpu", {}), ("no gpu", {"CUDA_VISIBLE_DEVICES": ""})):
        report = os.path.join(tmp, f"{name}-{where.replace(' ', '_')}.json")
        run = subprocess.run([cli, archive, inputs, "--json", report], capture_output=True, text=True,
                             env=dict(os.environ, **env))
        rep = json.load(open(report)) if os.path.exists(report) else {}
        native = rep.get("devices", {}).get("native")
        want = "cuda:0" if where == "gpu" else "cpu"
        good = run.returncode == 0 and rep.get("verdict") == "agree" and native == want
        ok &= good
        parts.append(f"{where}: exit {run.returncode}, {rep.get('verdict')} on {native}"
                     f"{'' if good else ' ' + (run.stdout[-300:] + run.stderr.strip()[-300:])}")
    return ok, "; ".join(parts)


def main():
    cli = sys.argv[1]
    assert torch.cuda.is_available(), "needs a CUDA device"
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        model = TinyDecoder().to("cuda", torch.bfloat16).eval()
        ids = torch.randint(0, 512, (2, 32), device="cuda")
        out = os.path.join(tmp, "captured")
        with torch.no_grad():
            expected = model(ids)
            torch._dynamo.reset()
            got = torch.compile(model, backend=pt2diff_capture.capture_backend(out, quiet=True))(ids)
        check(torch.equal(got, expected), "the captured program's logits are eager's bit for bit")
        graphs = json.load(open(os.path.join(out, "index.json")))["graphs"]
        check(len(graphs) >= 1 and all(g.get("status") == "ok" for g in graphs),
              f"index.json lists {len(graphs)} graph(s): {', '.join(str(g.get('status')) + ' ' + str(g.get('error', '')) for g in graphs)}")
        for g in graphs:
            ok, line = diagnose(cli, os.path.join(out, g["archive"]), os.path.join(out, g["inputs"]), tmp, f"graph{g['id']}")
            check(ok, f"captured bf16 graph {g['id']} ({g.get('ops', '?')} ops): {line}")

        net = AutocastConvNet().to("cuda").eval()
        x = torch.randn(2, 3, 16, 16, device="cuda")
        exported = pt2diff_capture.export_module(net, (x,), out=os.path.join(tmp, "convnet"))
        inspect = subprocess.run([cli, "inspect", exported.archive, exported.inputs], capture_output=True, text=True)
        check(inspect.returncode == 0 and "autocast" in inspect.stdout,
              f"export_module of an fp16-autocast conv net on cuda: inspect exit {inspect.returncode}, "
              f"{'an autocast region listed' if 'autocast' in inspect.stdout else 'no autocast region: ' + inspect.stdout[-300:]}")
        ok, line = diagnose(cli, exported.archive, exported.inputs, tmp, "convnet")
        check(ok, f"the fp16-autocast conv net: {line}")
    print(f"capture on cuda: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
