"""On a CUDA machine: the node verdict (docs/verdicts.md, "Node evidence") for models exported on the GPU in bf16
and fp16. Part of the GPU suite (scripts/gpu_test.sh runs it by tests/python/run_tests.py, tests/cli_case.py says
how); skipped where torch sees no CUDA device.

Exports, on cuda, a four-layer decoder in bfloat16 (RMSNorm, causal SDPA, a gated MLP, a residual stream) and a
residual conv net in float16 (a batch-normed stem, then diffusion-style blocks with GroupNorm after each convolution),
with plain torch (no extra package on the GPU box). For each:
- clean: `pt2diff G I --device cuda` with the real Inductor (Triton) agrees at level pass, the node verdict
  included (no node at --node-ratio or more times eager's local error);
- planted: a post-grad pass (tests/zoo/planted_worker.py, PLANT=scale) multiplies one op's result by 1 + e at
  one shape in every layer: the decoder's down projections (on CUDA a bias-free linear is an `mm` in the
  post-grad graph) by 1.03, the conv net's 3x3 convolutions over 16 channels by 1.02 (their norms absorb it; in a
  net with batch norm alone, as fixtures/zoo/resnet18_fp16, a 2% error reaches the logits at 9-27x eager's error
  and the output rule fails it: tests/zoo/test_zoo.py plants 0.4% there). PyTorch's
  torch._dynamo.utils.same() passes the outputs; pt2diff must flag exactly the planted nodes, name the first
  as the culprit (no search compile) and confirm it with one compile.
And the CPU-exported zoo archives llama_bf16 and resnet18_fp16 run on cuda stay at level pass.
"""
import json
import os
import subprocess
import sys
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "fixtures"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from make_zoo import randomize_norm_stats  # noqa: E402  (torch only; the zoo's batch-norm statistics)
from cli_case import CliTestCase  # noqa: E402
WORKER = os.path.join(ROOT, "tests", "zoo", "planted_worker.py")


class Block(nn.Module):
    def __init__(self, d=64, heads=4, hidden=128):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, vocab=128, d=64, layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class ResBlock(nn.Module):
    """A diffusion U-Net's residual block, post-norm: GroupNorm after each convolution (a uniform error in a
    convolution's result is what the norm removes)."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.norm1 = nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(4, c)
        self.conv2, self.norm2 = nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(4, c)

    def forward(self, x):
        return x + self.norm2(self.conv2(F.silu(self.norm1(self.conv1(x)))))


class ConvNet(nn.Module):
    def __init__(self, c=16, blocks=3):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.blocks = nn.Sequential(*(ResBlock(c) for _ in range(blocks)))
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.bn(self.stem(x)))).mean((2, 3)))


def export(tmp):
    """(name, archive, inputs, plant environment, the planted nodes) for the two GPU-exported models."""
    torch.manual_seed(0)
    out = []
    decoder = Decoder().eval()
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    convnet = ConvNet().eval()
    randomize_norm_stats(convnet)
    image = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    for name, model, args, dtype, plant in [
            ("decoder_cuda_bf16", decoder, (ids,), torch.bfloat16,
             {"PT2DIFF_PLANT_OPS": "matmul", "PT2DIFF_PLANT_DTYPE": "bfloat16", "PT2DIFF_PLANT_ERROR": "0.03",
              "PT2DIFF_PLANT_INPUT_SHAPE": "32,128"}),
            ("convnet_cuda_fp16", convnet, (image,), torch.float16,
             {"PT2DIFF_PLANT_OPS": "conv", "PT2DIFF_PLANT_DTYPE": "float16", "PT2DIFF_PLANT_ERROR": "0.02",
              "PT2DIFF_PLANT_INPUT_SHAPE": "2,16,16,16"})]:
        model = model.to("cuda", dtype)
        args = tuple(a.to("cuda", dtype) if a.is_floating_point() else a.to("cuda") for a in args)
        ep = torch.export.export(model, args)
        graph, inputs = os.path.join(tmp, name + ".pt2"), os.path.join(tmp, name + "_inputs.pt")
        torch.export.save(ep, graph)
        torch.save(args, inputs)
        shape = tuple(int(s) for s in plant["PT2DIFF_PLANT_INPUT_SHAPE"].split(","))
        planted = []
        for n in ep.graph.nodes:
            if n.op != "call_function" or not isinstance(n.args[0], torch.fx.Node) \
                    or not isinstance(n.args[0].meta.get("val"), torch.Tensor):
                continue
            s = tuple(n.args[0].meta["val"].shape)
            if plant["PT2DIFF_PLANT_OPS"] == "matmul" and "linear" in str(n.target) and (s[0] * s[1], s[2]) == shape:
                planted.append(n.name)
            elif plant["PT2DIFF_PLANT_OPS"] == "conv" and "conv" in str(n.target) and s == shape:
                planted.append(n.name)
        out.append((name, graph, inputs, dict(plant, PT2DIFF_PLANT="scale"), planted))
    return out


def pt2diff(cli, graph, inputs, tmp, name, extra=(), env=None):
    """`pt2diff GRAPH INPUTS --device cuda` with its report and saved outputs written to TMP/NAME.json and
    TMP/NAME.pt: (the process, the report or None, the saved outputs' path)."""
    report, saved = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".pt")
    for f in (report, saved):
        if os.path.exists(f):
            os.remove(f)
    run = subprocess.run([cli, graph, inputs, "--device", "cuda", "--json", report, "--save-outputs", saved, *extra],
                         capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    r = json.load(open(report)) if os.path.exists(report) else None
    return run, r, saved


def same_passes(saved):
    from torch._dynamo.utils import same
    compiled, native, fp64 = torch.load(saved, weights_only=True)
    return all(same(n.cpu(), c.cpu(), fp64_ref=f.cpu(), tol=1e-3) for c, n, f in zip(compiled, native, fp64)
               if c is not None and c.is_floating_point())


class NodeVerdictOnCuda(CliTestCase):
    """The two GPU exports and the two CPU-exported zoo archives run clean, and the GPU exports run with their planted
    bugs, in setUpClass; each test checks one property of every run (a subTest each)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        exported = export(cls.tmp)
        clean = [(n, g, i) for n, g, i, _, _ in exported]
        clean += [(m + " (CPU export)", os.path.join(cls.fixtures, "zoo", m + ".pt2"),
                   os.path.join(cls.fixtures, "zoo", m + "_inputs.pt")) for m in ("llama_bf16", "resnet18_fp16")]
        cls.clean = {name: pt2diff(cls.cli, graph, inputs, cls.tmp, f"clean{i}")[:2]
                     for i, (name, graph, inputs) in enumerate(clean)}
        cls.planted = {name: (plant, planted, *pt2diff(cls.cli, graph, inputs, cls.tmp, f"planted{i}",
                                                       ["--compiled", f"external:{sys.executable} {WORKER}"],
                                                       dict(plant, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")))
                       for i, (name, graph, inputs, plant, planted) in enumerate(exported)}

    def test_clean_models_pass_at_every_node(self):
        """Exit 0, level pass, and the node verdict available and pass."""
        for name, (run, r) in self.clean.items():
            with self.subTest(name):
                nv = (r or {}).get("node_verdict") or {}
                self.assertTrue(run.returncode == 0 and r and r["level"] == "pass" and nv.get("level") == "pass"
                                and nv.get("available"),
                                f"{name} clean on cuda: exit {run.returncode}, level {(r or {}).get('level')}, node verdict "
                                f"{nv.get('level')} over {nv.get('judged')} values, worst {nv.get('worst_node')} at "
                                f"{nv.get('worst_ratio', 0):.3g}x{'' if r else ': ' + run.stderr[-400:]}")

    def planted_run(self, name):
        """NAME's (plant environment, planted nodes, report, saved outputs' path); fails where there is no report."""
        plant, planted, run, r, saved = self.planted[name]
        self.assertTrue(r, f"{name} planted: pt2diff exited {run.returncode}: {run.stderr[-400:]}")
        return plant, planted, r, saved

    def test_planted_outputs_pass(self):
        """The outputs pass pt2diff's rule and torch._dynamo.utils.same()."""
        for name in self.planted:
            with self.subTest(name):
                plant, _, r, saved = self.planted_run(name)
                outputs = ", ".join(f"{o['name']} {o['error_ratio']:.3g}x" for o in r["outputs"])
                self.assertTrue(r["verdict"] == "agree" and same_passes(saved),
                                f"{name} planted {plant['PT2DIFF_PLANT_ERROR']}: the outputs pass pt2diff's rule and "
                                f"torch._dynamo.utils.same() (output error ratios {outputs})")

    def test_planted_nodes_flagged(self):
        """The node verdict flags exactly the planted nodes, the first of them first, at level suspicious or fail."""
        for name in self.planted:
            with self.subTest(name):
                _, planted, r, _ = self.planted_run(name)
                nv = r["node_verdict"]
                flagged = [f["node"] for f in nv["findings"]] + [a["node"] for f in nv["findings"] for a in f["also"]]
                ratios = ", ".join(f"{f['node']} {f['ratio']:.3g}x" for f in nv["findings"])
                self.assertTrue(planted and nv["findings"] and nv["findings"][0]["node"] == planted[0]
                                and sorted(flagged) == sorted(planted) and r["level"] in ("suspicious", "fail"),
                                f"{name} planted: level {r['level']}, node verdict flags {ratios} "
                                f"(+{len(flagged) - len(nv['findings'])} of the same op and shape); planted {', '.join(planted)}")

    def test_planted_culprit_named_and_confirmed(self):
        """The first planted node is the culprit, found by node evidence (no search compile), confirmed by one compile."""
        for name in self.planted:
            with self.subTest(name):
                _, planted, r, _ = self.planted_run(name)
                loc = r["localization"] or {}
                conf = r["node_verdict"].get("confirmation") or {}
                self.assertTrue(loc.get("found_by") == "node_evidence" and (loc.get("culprit") or {}).get("nodes") == planted[:1]
                                and conf.get("conclusion") in ("confirmed", "invisible_at_outputs"),
                                f"{name} planted: culprit {(loc.get('culprit') or {}).get('nodes')}, confirmation "
                                f"{conf.get('conclusion')} ({conf.get('before', 0):.3g}x -> {conf.get('after', 0):.3g}x), "
                                f"whole run {r['seconds']:.1f} s")


if __name__ == "__main__":
    unittest.main()
