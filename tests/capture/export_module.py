#!/usr/bin/env python3
"""export_module writes an archive and inputs pt2diff loads and runs as Python does (run by ctest).

    export_module.py PT2DIFF

The module takes what real programs pass: a namedtuple, an OrderedDict, a torch.Size keyword, a
Python float, None, a float8 tensor (which libtorch's unpickler cannot read: it travels as uint8 and
the graph bitcasts it back) and a slice of a large buffer (saved compact). Checked: the inputs file
holds only plain values, pt2diff runs the archive (exit 0, AGREE) and its eager outputs are Python's
bit for bit; core_aten=True; prims ops become ATen; normalize() and save(); the `export` and `train` commands.
"""
import collections
import os
import sys
import tempfile
import textwrap
import warnings

from support import Checks, capture_cli, last_line, pt2diff_eager

import pt2diff_capture
import torch
import torch.nn as nn
import subprocess

Pair = collections.namedtuple("Pair", "scale shift")


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, pair, table, q8, alpha, bias=None, *, shape):
        h = self.fc(x) * pair.scale + pair.shift + table["offset"]
        h = h + q8.to(torch.float32) * alpha
        if bias is not None:
            h = h + bias
        return h.reshape(shape)


class Prims(nn.Module):
    """What a minifier repro's forward calls: prims ops, which pt2diff runs as their ATen form."""

    def forward(self, x):
        low = torch.ops.prims.convert_element_type.default(x, torch.bfloat16)
        ramp = torch.ops.prims.iota.default(x.shape[-1], start=0, step=2, dtype=torch.int64, device=x.device,
                                            requires_grad=False)
        return torch.ops.prims.convert_element_type.default(low, torch.float32) + ramp


def ops_of(path):
    ep = torch.export.load(path)
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def same(a, b):
    return a is not None and len(a) == len(b) and all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b))


def main():
    pt2diff = sys.argv[1]
    warnings.simplefilter("ignore")  # torch.export.load's deprecation chatter
    c = Checks("export_module")
    torch.manual_seed(0)
    model = Mixed().eval()
    big = torch.randn(1000, 8)
    args = (big[10:14], Pair(torch.randn(8), torch.randn(8)), collections.OrderedDict(offset=torch.randn(8)),
            torch.randn(4, 8).to(torch.float8_e4m3fn), 0.5, None)
    kwargs = {"shape": torch.Size([8, 4])}
    with torch.no_grad():
        expected = (model(*args, **kwargs),)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mixed")
        e = pt2diff_capture.export_module(model, args, kwargs, out=out)
        c.check(e.archive == out + ".pt2" and e.inputs == out + "_inputs.pt" and os.path.isfile(e.archive)
                and os.path.isfile(e.inputs), f"wrote {e.archive} and {e.inputs}")
        saved = torch.load(e.inputs, weights_only=True)
        kinds = [type(v).__name__ if not isinstance(v, torch.Tensor) else str(v.dtype) for v in saved]
        c.check(type(saved) is tuple and kinds == ["torch.float32", "torch.float32", "torch.float32", "torch.float32",
                                                   "torch.uint8", "float", "NoneType", "int", "int"],
                f"inputs file: a flat tuple of plain values, float8 as uint8: {kinds}")
        c.check(saved[0].untyped_storage().nbytes() == 4 * 8 * 4, "the slice of a 1000-row buffer is saved compact")
        c.check(torch.equal(saved[4], args[3].view(torch.uint8)), "the float8 input's bytes are kept exactly")
        c.check({"name": "q8", "dtype": "float8_e4m3fn", "shape": [4, 8], "saved_as": "uint8"} in e.input_specs,
                "input_specs name the float8 input and how it is saved")
        c.check("aten.view.dtype" in ops_of(e.archive), "the archive bitcasts the uint8 input back (aten.view.dtype)")
        run, eager = pt2diff_eager(pt2diff, e.archive, e.inputs, os.path.join(tmp, "outputs.pt"))
        c.check(run.returncode == 0 and last_line(run.stdout).startswith("AGREE"),
                f"pt2diff --compiled eager: exit {run.returncode}, {last_line(run.stdout or run.stderr)}")
        c.check(same(eager, expected), "pt2diff's eager outputs equal the module's, bit for bit")

        core = pt2diff_capture.export_module(model, args, kwargs, out=os.path.join(tmp, "mixed_core"), core_aten=True)
        run, eager = pt2diff_eager(pt2diff, core.archive, core.inputs, os.path.join(tmp, "core_outputs.pt"))
        c.check("aten.linear.default" in ops_of(e.archive) and "aten.linear.default" not in ops_of(core.archive)
                and run.returncode == 0 and eager is not None and torch.allclose(eager[0], expected[0], atol=1e-6),
                f"core_aten=True: linear decomposed, pt2diff runs it ({last_line(run.stdout or run.stderr)})")

        x = torch.randn(3, 5)
        p = pt2diff_capture.export_module(Prims(), (x,), out=os.path.join(tmp, "prims"))
        inspect = subprocess.run([pt2diff, "inspect", p.archive, p.inputs], capture_output=True, text=True)
        run, eager = pt2diff_eager(pt2diff, p.archive, p.inputs, os.path.join(tmp, "prims_outputs.pt"))
        c.check(not any(op.startswith("prims.") for op in ops_of(p.archive)) and "unsupported ops: none" in inspect.stdout
                and same(eager, (Prims()(x),)), f"prims ops become ATen ops pt2diff runs: {sorted(set(ops_of(p.archive)))}")

        n = pt2diff_capture.normalize({"size": torch.Size([2, 3]), "pair": Pair(1, 2.5),
                                      "od": collections.OrderedDict(a=torch.ones(2, requires_grad=True))})
        c.check(type(n) is dict and n["size"] == (2, 3) and type(n["pair"]) is tuple and type(n["od"]) is dict
                and not n["od"]["a"].requires_grad, "normalize: torch.Size, namedtuple -> tuple, OrderedDict -> dict, detached")
        try:
            pt2diff_capture.normalize((torch.ones(1), {1, 2}))
            c.check(False, "normalize rejects a set")
        except pt2diff_capture.CaptureError as err:
            c.check(str(err).startswith("input[1] is a set: pt2diff inputs hold tensors"), f"normalize rejects a set: {err}")
        saved = os.path.join(tmp, "mlp_inputs.pt")
        pt2diff_capture.save(collections.OrderedDict(x=torch.randn(4, 32)), saved)
        run = subprocess.run([pt2diff, "inspect", os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "mlp.pt2"), saved],
                             capture_output=True, text=True)
        c.check(run.returncode == 0 and "inputs bind: yes" in run.stdout, "save() of an OrderedDict: pt2diff binds it")

        with open(os.path.join(tmp, "tiny_models.py"), "w") as f:
            f.write(textwrap.dedent("""
                import torch
                def make():
                    torch.manual_seed(1)
                    return torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.GELU()), (torch.randn(3, 4),)
                def step():
                    torch.manual_seed(1)
                    model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.BatchNorm1d(2))
                    return model, (torch.randn(3, 4),), torch.nn.functional.cross_entropy, (torch.tensor([0, 1, 1]),)
            """))
        cli = capture_cli("export", "--module", "tiny_models:make", "--out", "tiny", "--core-aten", cwd=tmp)
        run, eager = pt2diff_eager(pt2diff, os.path.join(tmp, "tiny.pt2"), os.path.join(tmp, "tiny_inputs.pt"),
                                   os.path.join(tmp, "tiny_outputs.pt"))
        c.check(cli.returncode == 0 and cli.stdout.startswith("wrote tiny.pt2 (") and run.returncode == 0,
                f"python -m pt2diff_capture export --module tiny_models:make: {cli.stdout.strip() or cli.stderr.strip()}")
        # `train`: one training step; pt2diff names its loss, gradients and the running statistics it writes.
        cli = capture_cli("train", "--module", "tiny_models:step", "--out", "step", cwd=tmp)
        run = subprocess.run([pt2diff, os.path.join(tmp, "step.pt2"), os.path.join(tmp, "step_inputs.pt"), "--compiled",
                              "eager"], capture_output=True, text=True)
        named = [n for n in ("loss", "0.weight.grad", "0.bias.grad", "1.weight.grad", "1.bias.grad",
                             "buffer '1.running_mean' after the graph") if n in run.stdout]
        c.check(cli.returncode == 0 and cli.stdout.startswith("wrote step.pt2 (") and run.returncode == 0 and len(named) == 6,
                f"python -m pt2diff_capture train --module tiny_models:step: {cli.stdout.strip() or cli.stderr.strip()}; "
                f"pt2diff names {named}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
