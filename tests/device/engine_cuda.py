#!/usr/bin/env python3
"""On a CUDA machine: pt2diff's own runs on the GPU (scripts/gpu_test.sh runs this).

    python tests/device/engine_cuda.py PT2DIFF FIXTURES_DIR

For CPU-exported fixtures and GPU-exported ones (fixtures/cuda), with `--device cuda --compiled eager`:
- the eager (native) run is bit for bit PyTorch's CUDA eager: `ep.module()` moved to the GPU with the
  devices its export baked in following it (tests/engine/backends/inductor_agreement.py: on_device);
- the fp64 run is PyTorch running the same graph in float64 on the GPU (fixtures/reference.py) to 1e-12
  of the output's scale;
- the report says where each run was (`devices` in the JSON), with the allocator's peak;
- `--reference-device cpu`, and `--gpu-memory` too small for the fp64 run beside the eager one, put the
  fp64 run on the CPU, say so, and give the same fp64 outputs to 1e-12;
- TF32: with the user's `--matmul-precision high` (TF32 matmuls, eager and compiled alike) an fp32
  matmul graph judged against fp64 (`--rule allclose --tol 1e-5`) diverges under Inductor, and the
  compiler-lever hint names `tf32_off` as what removes it.
Exits 1 naming every check that failed.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
sys.path.insert(0, os.path.join(HERE, "..", "engine", "backends"))
from reference import Fp64Reference, fp64_reference  # noqa: E402
from inductor_agreement import on_device, user_call  # noqa: E402

CPU_FIXTURES = ["mlp", "mlp_core", "attention_core", "bf16_block_core", "conv_bn_relu_core", "ln_softmax_gelu_core",
                "mixed_precision_core", "multi_output_core"]
GPU_FIXTURES = ["cuda/attention_cuda_fp32", "cuda/attention_cuda_bf16", "cuda/attention_cuda_masked_fp32"]


def leaves(out):
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def scaled_error(got, want):
    """max |got - want| over the RMS of `want` (1 where it is 0)."""
    got, want = got.double().cpu(), want.double().cpu()
    scale = want.pow(2).mean().sqrt().item() or 1.0
    return (got - want).abs().max().item() / scale if want.numel() else 0.0


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)


def run_pt2diff(pt2diff, graph, inputs, tmp, *flags):
    saved, report = os.path.join(tmp, "outputs.pt"), os.path.join(tmp, "report.json")
    for f in (saved, report):
        if os.path.exists(f):
            os.remove(f)
    run = subprocess.run([pt2diff, graph, inputs, "--save-outputs", saved, "--json", report, *flags], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        return run, None, None
    return run, torch.load(saved, weights_only=True), json.load(open(report))


FUSED_ATTENTION = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                   "_scaled_dot_product_cudnn_attention")


class GpuFp64Reference(Fp64Reference):
    """fixtures/reference.py's fp64 interpreter, plus the one fix-up a GPU export needs: the CUDA fused
    attention kernels have no float64 form, so they run as aten._scaled_dot_product_attention_math
    (attention output only) laid out with the strides the graph recorded for the fused output (later
    views rely on them), as pt2diff's fp64 run does."""

    def run_node(self, n):
        out = super().run_node(n)
        val = n.meta.get("val")
        if n.op == "call_function" and getattr(n.target, "_schema", None) is not None and \
                n.target._schema.name.split("::")[-1] in FUSED_ATTENTION and isinstance(val, (tuple, list)):
            laid_out = torch.empty_strided(out[0].shape, val[0].stride(), dtype=out[0].dtype, device=out[0].device)
            laid_out.copy_(out[0])
            out = (laid_out,) + tuple(out[1:])
        return out

    def call_function(self, target, args, kwargs):
        schema = getattr(target, "_schema", None)
        if schema is None or schema.name.split("::")[-1] not in FUSED_ATTENTION:
            return super().call_function(target, args, kwargs)
        bound = dict(zip([a.name for a in schema.arguments], args))
        bound.update(kwargs)
        out, _ = torch.ops.aten._scaled_dot_product_attention_math(
            bound["query"], bound["key"], bound["value"], bound.get("attn_bias"), bound.get("dropout_p", 0.0),
            bound.get("is_causal", False), None, scale=bound.get("scale"))
        return (out,) + (None,) * (len(schema.returns) - 1)


def gpu_reference(ep, args, kwargs):
    """PyTorch's eager and float64 results of `ep` on the GPU."""
    module = on_device(ep.module(), "cuda")
    to_gpu = lambda v: v.to("cuda") if isinstance(v, torch.Tensor) else v  # noqa: E731
    gargs, gkwargs = torch.utils._pytree.tree_map(to_gpu, (args, kwargs))
    torch.manual_seed(0)  # pt2diff seeds its runs with --seed (0)
    with torch.no_grad():
        eager = leaves(module(*gargs, **gkwargs))
    # fixtures/reference.py's fp64 reference, with the module and the inputs on the GPU.
    fp64 = leaves(fp64_reference(ep, gargs, gkwargs, module=on_device(ep.module(), "cuda"), interpreter=GpuFp64Reference))
    return eager, fp64


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    assert torch.cuda.is_available(), "needs a CUDA device"
    c = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        for name in CPU_FIXTURES + GPU_FIXTURES:
            base = name[:-5] if name.endswith("_core") else name
            graph, inputs = os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, base + "_inputs.pt")
            run, saved, report = run_pt2diff(pt2diff, graph, inputs, tmp, "--compiled", "eager", "--device", "cuda",
                                             "--no-exploded", "--no-localize")
            if saved is None:
                c.expect(False, f"{name}: pt2diff exited {run.returncode}: {run.stderr.strip()}")
                continue
            _, ours_eager, ours_fp64 = saved
            ep = torch.export.load(graph)
            args, kwargs = user_call(torch.load(inputs, weights_only=True), ep)
            eager, fp64 = gpu_reference(ep, args, kwargs)
            n = min(len(eager), len(ours_eager))
            c.expect(n == len(eager) and all(torch.equal(ours_eager[i], eager[i].cpu()) for i in range(n)),
                     f"{name}: eager on the GPU is PyTorch's CUDA eager bit for bit ({n} outputs)")
            worst = max(scaled_error(ours_fp64[i], fp64[i]) for i in range(n))
            c.expect(worst <= 1e-12, f"{name}: fp64 on the GPU is PyTorch's float64 on the GPU (worst {worst:.1e} of scale)")
            d = report["devices"]
            c.expect(d["native"] == "cuda:0" and d["reference"] == "cuda:0" and d["peak_gpu_bytes"] > 0,
                     f"{name}: the report says eager and fp64 ran on cuda:0 ({d})")
            peaks = {st["name"]: st["peak_gpu_bytes"] for st in report["stages"]}
            c.expect(max(peaks.values()) == d["peak_gpu_bytes"] and peaks["run_references"] > 0,
                     f"{name}: each stage's GPU peak is stated, the run's the most of them ({peaks})")

        # The fp64 run on the CPU: asked for, and chosen when the GPU budget is too small for it.
        name = "bf16_block_core"
        graph, inputs = os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, "bf16_block_inputs.pt")
        _, on_gpu, _ = run_pt2diff(pt2diff, graph, inputs, tmp, "--compiled", "eager", "--device", "cuda", "--no-exploded")
        for flags, why in ((["--reference-device", "cpu"], "--reference-device cpu"),
                           (["--gpu-memory", "100K"], "does not fit")):  # eager needs 67 KiB, with fp64 160
            run, saved, report = run_pt2diff(pt2diff, graph, inputs, tmp, "--compiled", "eager", "--device", "cuda",
                                             "--no-exploded", *flags)
            if saved is None or on_gpu is None:
                c.expect(False, f"{name} {' '.join(flags)}: pt2diff exited {run.returncode}: {run.stderr.strip()}")
                continue
            d = report["devices"]
            c.expect(d["native"] == "cuda:0" and d["reference"] == "cpu" and why in d["why"],
                     f"{name} {' '.join(flags)}: fp64 on the CPU, said so ({d})")
            worst = max(scaled_error(a, b) for a, b in zip(saved[2], on_gpu[2]))
            c.expect(worst <= 1e-12, f"{name} {' '.join(flags)}: the CPU fp64 outputs are the GPU ones (worst {worst:.1e})")
            c.expect("devices: eager on cuda:0, fp64 on cpu" in run.stdout, f"{name} {' '.join(flags)}: the text report says so")
        run = subprocess.run([pt2diff, graph, inputs, "--compiled", "eager", "--device", "cuda", "--gpu-memory", "1K"],
                             capture_output=True, text=True)
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        c.expect(run.returncode == 2 and len(lines) == 1 and "--gpu-memory" in lines[0],
                 f"eager runs that cannot fit are refused in one line before they start (exit {run.returncode}: {run.stderr.strip()})")

        # The default job with Inductor on a GPU export whose cuDNN attention leaves outputs unset (logsumexp
        # without compute_log_sumexp: None in eager, a Tensor to the fake kernel): the exploded compile
        # asks only for what eager computed, and every op, attention included, gets its compiled error.
        name = "attention_cuda_bf16"
        graph, inputs = os.path.join(fixtures, "cuda", name + ".pt2"), os.path.join(fixtures, "cuda", name + "_inputs.pt")
        run, saved, report = run_pt2diff(pt2diff, graph, inputs, tmp, "--device", "cuda")
        if report is None:
            c.expect(False, f"{name} with Inductor: pt2diff exited {run.returncode}: {run.stderr.strip()}")
        else:
            compiles = {k["what"]: k for k in report["compiles"]}
            c.expect("exploded" in compiles and all(k["ok"] for k in report["compiles"]),
                     f"{name} with Inductor: the whole graph and the exploded ops compile "
                     f"({[(k['what'], k['ok'], k['message'][:200]) for k in report['compiles']]})")
            attention = [v for n in report["nodes"] if "cudnn_attention" in n["op"] for v in n["values"] if v.get("compiled_local")]
            c.expect(len(attention) == 1, f"{name} with Inductor: the attention output alone has a compiled local error ({len(attention)})")

        # TF32 under the user's matmul precision, explained by the tf32_off lever.
        graph, inputs = os.path.join(fixtures, "mlp_core.pt2"), os.path.join(fixtures, "mlp_inputs.pt")
        run, saved, report = run_pt2diff(pt2diff, graph, inputs, tmp, "--device", "cuda", "--matmul-precision", "high",
                                         "--rule", "allclose", "--tol", "1e-5", "--no-exploded")
        if report is None:
            c.expect(False, f"TF32: pt2diff exited {run.returncode}: {run.stderr.strip()}")
        else:
            loc = report.get("localization") or {}
            hints = json.dumps(loc.get("hints", []))
            c.expect(report["verdict"] == "diverged", f"TF32: an fp32 matmul graph at precision high diverges from fp64 ({report['verdict']})")
            c.expect("tf32_off" in hints, f"TF32: the compiler-lever hint names tf32_off ({hints[:300]})")
        # The exploded compile's judge runs every op on the weights the runs already hold on the GPU, not on a second
        # copy. Judged by difference: stacks of 32 and 64 Linear(1024, 1024) bf16 layers (64 and 128 MiB of weights,
        # 2 tokens of activations). What does not grow with the weights cancels out: cuBLAS's workspace (by our reading
        # of the fixtures' peaks: fixtures/mlp.pt2, two small fp32 linears, peaks at 33 MiB in every stage on an H200) and one
        # op's transient fp64 cast. One copy of the weights adds about 64 MiB from the first stack to the second, two
        # copies 128 MiB: the check's bound is 1.5x the weights added.
        peaks = {}
        for layers in (32, 64):
            torch.manual_seed(0)
            stack = torch.nn.Sequential(*(torch.nn.Linear(1024, 1024, bias=False) for _ in range(layers)))
            stack = stack.to("cuda", torch.bfloat16).eval()
            x = torch.randn(1, 2, 1024, device="cuda", dtype=torch.bfloat16)
            with torch.no_grad():
                ep = torch.export.export(stack, (x,))
            graph, inputs = os.path.join(tmp, f"linear_stack_{layers}.pt2"), os.path.join(tmp, f"linear_stack_{layers}_inputs.pt")
            torch.export.save(ep, graph)
            torch.save((x.cpu(),), inputs)
            weights = sum(p.numel() * p.element_size() for p in stack.parameters())
            del stack, ep
            run, _, report = run_pt2diff(pt2diff, graph, inputs, tmp, "--device", "cuda", "--compiled", "eager")
            if report is None:
                c.expect(False, f"linear stack of {layers}: pt2diff exited {run.returncode}: {run.stderr.strip()}")
                break
            stage = {st["name"]: st["peak_gpu_bytes"] for st in report["stages"]}["compile_exploded"]
            peaks[layers] = (weights, stage)
        if len(peaks) == 2:
            (w32, p32), (w64, p64) = peaks[32], peaks[64]
            c.expect(p64 - p32 < 1.5 * (w64 - w32),
                     f"linear stack: the exploded compile's judge holds one copy of the weights on the GPU (its stage's peak "
                     f"{p32 >> 20} MiB with {w32 >> 20} MiB of weights, {p64 >> 20} MiB with {w64 >> 20} MiB: "
                     f"{(p64 - p32) >> 20} MiB more for {(w64 - w32) >> 20} MiB more weights)")
    if c.failures:
        print(f"{len(c.failures)} check(s) failed")
        sys.exit(1)
    print("pt2diff's eager and fp64 runs on the GPU match PyTorch's")


if __name__ == "__main__":
    main()
