"""On a CUDA machine: pt2diff's own runs on the GPU. Part of the GPU suite (scripts/gpu_test.sh runs it by
tests/python/run_tests.py, tests/cli_case.py says how); skipped where torch sees no CUDA device.

For CPU-exported fixtures and GPU-exported ones (fixtures/cuda), with `--device cuda --compiled eager`:
- the eager (native) run is bit for bit PyTorch's CUDA eager: `ep.module()` moved to the GPU with the
  devices its export baked in following it (tests/engine/backends/test_inductor_agreement.py: on_device);
- the fp64 run is PyTorch running the same graph in float64 on the GPU (fixtures/reference.py) to 1e-12
  of the output's scale;
- the report says where each run was (`devices` in the JSON), with the allocator's peak;
- `--reference-device cpu`, and `--gpu-memory` too small for the fp64 run beside the eager one, put the
  fp64 run on the CPU, say so, and give the same fp64 outputs to 1e-12;
- TF32: with the user's `--matmul-precision high` (TF32 matmuls, eager and compiled alike) an fp32
  matmul graph judged against fp64 (`--rule allclose --tol 1e-5`) diverges under Inductor, and the
  compiler-lever hint names `tf32_off` as what removes it.
"""
import json
import os
import subprocess
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
sys.path.insert(0, os.path.join(HERE, "..", "engine", "backends"))
sys.path.insert(0, os.path.join(HERE, ".."))
from reference import Fp64Reference, fp64_reference  # noqa: E402
from test_inductor_agreement import on_device, user_call  # noqa: E402
from cli_case import CliTestCase  # noqa: E402

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


def run_pt2diff(pt2diff, graph, inputs, tmp, *flags):
    """pt2diff with --save-outputs and --json: (the process, its saved outputs, its report); both None unless it
    exited 0 or 1."""
    saved, report = os.path.join(tmp, "outputs.pt"), os.path.join(tmp, "report.json")
    for f in (saved, report):
        if os.path.exists(f):
            os.remove(f)
    run = subprocess.run([pt2diff, graph, inputs, "--save-outputs", saved, "--json", report, *flags],
                         capture_output=True, text=True)
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


class OnCuda(CliTestCase):
    """A CliTestCase skipped where torch sees no CUDA device."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")


class EagerAndFp64OnCuda(OnCuda):
    """Each fixture through `pt2diff --device cuda --compiled eager` and PyTorch on the GPU, in setUpClass; each test
    checks one property of every fixture (a subTest each)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = {}
        for name in CPU_FIXTURES + GPU_FIXTURES:
            base = name[:-5] if name.endswith("_core") else name
            graph, inputs = os.path.join(cls.fixtures, name + ".pt2"), os.path.join(cls.fixtures, base + "_inputs.pt")
            process, saved, report = run_pt2diff(cls.cli, graph, inputs, cls.tmp, "--compiled", "eager", "--device", "cuda",
                                                 "--no-exploded", "--no-localize")
            eager = fp64 = None
            if saved is not None:
                ep = torch.export.load(graph)
                args, kwargs = user_call(torch.load(inputs, weights_only=True), ep)
                eager, fp64 = gpu_reference(ep, args, kwargs)
            cls.runs[name] = (process, saved, report, eager, fp64)

    def run_of(self, name):
        """NAME's (pt2diff's eager outputs, its fp64 outputs, its report, PyTorch's eager, PyTorch's fp64); fails where
        pt2diff did not run."""
        process, saved, report, eager, fp64 = self.runs[name]
        self.assertIsNotNone(saved, f"{name}: pt2diff exited {process.returncode}: {process.stderr.strip()}")
        _, ours_eager, ours_fp64 = saved
        return ours_eager, ours_fp64, report, eager, fp64

    def test_eager_is_pytorchs_cuda_eager(self):
        """Bit for bit, every output."""
        for name in self.runs:
            with self.subTest(name):
                ours_eager, _, _, eager, _ = self.run_of(name)
                n = min(len(eager), len(ours_eager))
                self.assertTrue(n == len(eager) and all(torch.equal(ours_eager[i], eager[i].cpu()) for i in range(n)),
                                f"{name}: eager on the GPU is PyTorch's CUDA eager bit for bit ({n} outputs)")

    def test_fp64_is_pytorchs_float64_on_the_gpu(self):
        """To 1e-12 of each output's scale."""
        for name in self.runs:
            with self.subTest(name):
                ours_eager, ours_fp64, _, eager, fp64 = self.run_of(name)
                n = min(len(eager), len(ours_eager))
                worst = max(scaled_error(ours_fp64[i], fp64[i]) for i in range(n))
                self.assertLessEqual(worst, 1e-12,
                                     f"{name}: fp64 on the GPU is PyTorch's float64 on the GPU (worst {worst:.1e} of scale)")

    def test_report_says_where_each_run_was(self):
        """`devices`: eager and fp64 on cuda:0, with the allocator's peak."""
        for name in self.runs:
            with self.subTest(name):
                d = self.run_of(name)[2]["devices"]
                self.assertTrue(d["native"] == "cuda:0" and d["reference"] == "cuda:0" and d["peak_gpu_bytes"] > 0,
                                f"{name}: the report says eager and fp64 ran on cuda:0 ({d})")

    def test_stages_gpu_peaks(self):
        """Each stage's GPU peak is stated, the run's the most of them."""
        for name in self.runs:
            with self.subTest(name):
                report = self.run_of(name)[2]
                peaks = {st["name"]: st["peak_gpu_bytes"] for st in report["stages"]}
                self.assertTrue(max(peaks.values()) == report["devices"]["peak_gpu_bytes"] and peaks["run_references"] > 0,
                                f"{name}: each stage's GPU peak is stated, the run's the most of them ({peaks})")


class Fp64OnTheCpu(OnCuda):
    """The fp64 run on the CPU: asked for, and chosen when the GPU budget is too small for it (bf16_block_core)."""

    NAME = "bf16_block_core"
    CASES = ((["--reference-device", "cpu"], "--reference-device cpu"),
             (["--gpu-memory", "100K"], "does not fit"))  # eager needs 67 KiB, with fp64 160

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.graph, cls.inputs = os.path.join(cls.fixtures, cls.NAME + ".pt2"), os.path.join(cls.fixtures, "bf16_block_inputs.pt")
        _, cls.on_gpu, _ = run_pt2diff(cls.cli, cls.graph, cls.inputs, cls.tmp, "--compiled", "eager", "--device", "cuda",
                                       "--no-exploded")
        cls.runs = {" ".join(flags): (why, *run_pt2diff(cls.cli, cls.graph, cls.inputs, cls.tmp, "--compiled", "eager",
                                                        "--device", "cuda", "--no-exploded", *flags))
                    for flags, why in cls.CASES}

    def run_of(self, flags):
        """(why, the process, its saved outputs, its report) of the case FLAGS; fails where pt2diff did not run."""
        why, process, saved, report = self.runs[flags]
        if saved is None or self.on_gpu is None:
            self.fail(f"{self.NAME} {flags}: pt2diff exited {process.returncode}: {process.stderr.strip()}")
        return why, process, saved, report

    def test_fp64_on_the_cpu_said_so(self):
        """The report's `devices`: eager on cuda:0, fp64 on the CPU, and why."""
        for flags in self.runs:
            with self.subTest(flags):
                why, _, _, report = self.run_of(flags)
                d = report["devices"]
                self.assertTrue(d["native"] == "cuda:0" and d["reference"] == "cpu" and why in d["why"],
                                f"{self.NAME} {flags}: fp64 on the CPU, said so ({d})")

    def test_cpu_fp64_outputs_are_the_gpu_ones(self):
        """To 1e-12 of each output's scale."""
        for flags in self.runs:
            with self.subTest(flags):
                saved = self.run_of(flags)[2]
                worst = max(scaled_error(a, b) for a, b in zip(saved[2], self.on_gpu[2]))
                self.assertLessEqual(worst, 1e-12,
                                     f"{self.NAME} {flags}: the CPU fp64 outputs are the GPU ones (worst {worst:.1e})")

    def test_text_report_says_so(self):
        for flags in self.runs:
            with self.subTest(flags):
                process = self.run_of(flags)[1]
                self.assertIn("devices: eager on cuda:0, fp64 on cpu", process.stdout,
                              f"{self.NAME} {flags}: the text report says so")

    def test_eager_that_cannot_fit_is_refused(self):
        """Eager runs that cannot fit are refused in one line before they start."""
        process = subprocess.run([self.cli, self.graph, self.inputs, "--compiled", "eager", "--device", "cuda",
                                  "--gpu-memory", "1K"], capture_output=True, text=True)
        lines = [line for line in process.stderr.splitlines() if line.strip()]
        self.assertTrue(process.returncode == 2 and len(lines) == 1 and "--gpu-memory" in lines[0],
                        f"eager runs that cannot fit are refused in one line before they start (exit {process.returncode}: "
                        f"{process.stderr.strip()})")


class InductorOnCudnnAttention(OnCuda):
    """The default job with Inductor on a GPU export whose cuDNN attention leaves outputs unset (logsumexp without
    compute_log_sumexp: None in eager, a Tensor to the fake kernel): the exploded compile asks only for what eager
    computed, and every op, attention included, gets its compiled error."""

    NAME = "attention_cuda_bf16"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        graph = os.path.join(cls.fixtures, "cuda", cls.NAME + ".pt2")
        inputs = os.path.join(cls.fixtures, "cuda", cls.NAME + "_inputs.pt")
        cls.process, _, cls.report = run_pt2diff(cls.cli, graph, inputs, cls.tmp, "--device", "cuda")

    def setUp(self):
        self.assertIsNotNone(self.report, f"{self.NAME} with Inductor: pt2diff exited {self.process.returncode}: "
                                          f"{self.process.stderr.strip()}")

    def test_whole_graph_and_exploded_ops_compile(self):
        compiles = {k["what"]: k for k in self.report["compiles"]}
        self.assertTrue("exploded" in compiles and all(k["ok"] for k in self.report["compiles"]),
                        f"{self.NAME} with Inductor: the whole graph and the exploded ops compile "
                        f"({[(k['what'], k['ok'], k['message'][:200]) for k in self.report['compiles']]})")

    def test_attention_output_alone_has_compiled_local_error(self):
        attention = [v for n in self.report["nodes"] if "cudnn_attention" in n["op"] for v in n["values"]
                     if v.get("compiled_local")]
        self.assertEqual(len(attention), 1,
                         f"{self.NAME} with Inductor: the attention output alone has a compiled local error ({len(attention)})")


class Tf32UnderMatmulPrecision(OnCuda):
    """TF32 under the user's matmul precision (`--matmul-precision high`), explained by the tf32_off lever."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        graph, inputs = os.path.join(cls.fixtures, "mlp_core.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt")
        cls.process, _, cls.report = run_pt2diff(cls.cli, graph, inputs, cls.tmp, "--device", "cuda", "--matmul-precision",
                                                 "high", "--rule", "allclose", "--tol", "1e-5", "--no-exploded")

    def setUp(self):
        self.assertIsNotNone(self.report, f"TF32: pt2diff exited {self.process.returncode}: {self.process.stderr.strip()}")

    def test_fp32_matmuls_at_precision_high_diverge(self):
        """An fp32 matmul graph at precision high diverges from fp64."""
        self.assertEqual(self.report["verdict"], "diverged",
                         f"TF32: an fp32 matmul graph at precision high diverges from fp64 ({self.report['verdict']})")

    def test_compiler_lever_hint_names_tf32_off(self):
        hints = json.dumps((self.report.get("localization") or {}).get("hints", []))
        self.assertIn("tf32_off", hints, f"TF32: the compiler-lever hint names tf32_off ({hints[:300]})")


class ExplodedJudgeWeights(OnCuda):
    """The exploded compile's judge runs every op on the weights the runs already hold on the GPU, not on a second
    copy. Judged by difference: stacks of 32 and 64 Linear(1024, 1024) bf16 layers (64 and 128 MiB of weights,
    2 tokens of activations). What does not grow with the weights cancels out: cuBLAS's workspace (by our reading
    of the fixtures' peaks: fixtures/mlp.pt2, two small fp32 linears, peaks at 33 MiB in every stage on an H200) and
    one op's transient fp64 cast. One copy of the weights adds about 64 MiB from the first stack to the second, two
    copies 128 MiB: the check's bound is 1.5x the weights added."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.peaks, cls.failed = {}, None
        for layers in (32, 64):
            torch.manual_seed(0)
            stack = torch.nn.Sequential(*(torch.nn.Linear(1024, 1024, bias=False) for _ in range(layers)))
            stack = stack.to("cuda", torch.bfloat16).eval()
            x = torch.randn(1, 2, 1024, device="cuda", dtype=torch.bfloat16)
            with torch.no_grad():
                ep = torch.export.export(stack, (x,))
            graph = os.path.join(cls.tmp, f"linear_stack_{layers}.pt2")
            inputs = os.path.join(cls.tmp, f"linear_stack_{layers}_inputs.pt")
            torch.export.save(ep, graph)
            torch.save((x.cpu(),), inputs)
            weights = sum(p.numel() * p.element_size() for p in stack.parameters())
            del stack, ep
            process, _, report = run_pt2diff(cls.cli, graph, inputs, cls.tmp, "--device", "cuda", "--compiled", "eager")
            if report is None:
                cls.failed = f"linear stack of {layers}: pt2diff exited {process.returncode}: {process.stderr.strip()}"
                break
            stage = {st["name"]: st["peak_gpu_bytes"] for st in report["stages"]}["compile_exploded"]
            cls.peaks[layers] = (weights, stage)

    def test_judge_holds_one_copy_of_the_weights(self):
        """The compile_exploded stage's GPU peak grows by less than 1.5x the weights added."""
        self.assertIsNone(self.failed, self.failed)
        (w32, p32), (w64, p64) = self.peaks[32], self.peaks[64]
        self.assertTrue(p64 - p32 < 1.5 * (w64 - w32),
                        f"linear stack: the exploded compile's judge holds one copy of the weights on the GPU (its stage's peak "
                        f"{p32 >> 20} MiB with {w32 >> 20} MiB of weights, {p64 >> 20} MiB with {w64 >> 20} MiB: "
                        f"{(p64 - p32) >> 20} MiB more for {(w64 - w32) >> 20} MiB more weights)")


if __name__ == "__main__":
    unittest.main()
