#!/usr/bin/env python3
"""On a CUDA machine: the Inductor worker compiles graphs exported on a GPU (fixtures/cuda) both for
CUDA (as exported) and for the CPU (weights and sample inputs mapped to the CPU, baked devices
rewritten, fused attention run as math attention), and both agree with what CUDA eager computed.
Run by hand on a GPU box: python tests/device/cuda_export_worker_cuda.py FIXTURE_DIR OUT_DIR
"""
import os
import sys
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())  # a fresh Inductor cache, before torch
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pt2diff_worker import Worker  # noqa: E402

fixtures, out = sys.argv[1], sys.argv[2]


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def main():
    assert torch.cuda.is_available(), "needs a CUDA device"
    for name in ("attention_cuda_fp32", "attention_cuda_bf16", "attention_cuda_masked_fp32"):
        archive = os.path.join(fixtures, f"{name}.pt2")
        (x,) = torch.load(os.path.join(fixtures, f"{name}_inputs.pt"), weights_only=True)
        (expected,) = torch.load(os.path.join(fixtures, f"{name}_cuda_expected.pt"), weights_only=True)
        (fp64,) = torch.load(os.path.join(fixtures, f"{name}_fp64_expected.pt"), weights_only=True)
        names = None
        for device in ("cuda", "cpu"):
            w = Worker()
            w.load({"archive": archive, "device": device})
            if names is None:  # the archive's names, as the engine sends them (compiling for the CPU renames attention)
                graph = w.program.graph_module.graph
                names = ([n.name for n in graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)],
                         [n.name for n in graph.nodes if n.op == "placeholder"],
                         [a.name for a in graph.output_node().args[0]])
            nodes, inputs, outputs = names
            sent = os.path.join(out, "inputs.pt")
            torch.save(tuple((n, x) for n in inputs if n not in w.state), sent)
            w.compile({"region": "g", "nodes": nodes, "inputs": inputs, "outputs": outputs, "example_inputs": sent})
            result = os.path.join(out, "outputs.pt")
            w.run({"region": "g", "inputs": sent, "outputs_file": result})
            (got,) = torch.load(result, weights_only=True)
            print(f"{name:<28} inductor on {device:<4}: max |compiled - cuda eager| {(got.double() - expected.double()).abs().max().item():.3e}"
                  f"  RMSE to fp64: compiled {rmse(got, fp64):.3e}, cuda eager {rmse(expected, fp64):.3e}")
            # The repro writer's export: on the load's device, so a GPU window keeps its fused kernels.
            archive_out = os.path.join(out, f"{name}_{device}_window.pt2")
            w.export({"nodes": nodes, "inputs": inputs, "outputs": outputs, "example_inputs": sent,
                      "archive": archive_out, "inputs_file": os.path.join(out, "window_inputs.pt")})
            window = torch.export.load(archive_out)
            ops = sorted({str(n.target) for n in window.graph.nodes if "attention" in str(n.target)})
            print(f"{'':<28} exported for {device:<4}: {ops}, input on "
                  f"{next(n for n in window.graph.nodes if n.op == 'placeholder').meta['val'].device}")
    print(torch.__version__)


if __name__ == "__main__":
    main()
