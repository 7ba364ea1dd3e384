"""export_module writes an archive and inputs pt2diff loads and runs as Python does. A ctest, label capture
(tests/cli_case.py says how to run it alone).

The module takes what real programs pass: a namedtuple, an OrderedDict, a torch.Size keyword, a
Python float, None, a float8 tensor (which libtorch's unpickler cannot read: it travels as uint8 and
the graph bitcasts it back) and a slice of a large buffer (saved compact). Checked: the inputs file
holds only plain values, pt2diff runs the archive (exit 0, AGREE) and its eager outputs are Python's
bit for bit; core_aten=True; prims ops become ATen; normalize() and save(); the `export` and `train` commands.
"""
import collections
import os
import subprocess
import sys
import textwrap
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import CliTestCase  # noqa: E402
from capture_support import capture_cli, last_line, pt2diff_eager  # noqa: E402

import pt2diff_capture  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.export.load's deprecation chatter
        ep = torch.export.load(path)
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def same(a, b):
    return a is not None and len(a) == len(b) and all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b))


class MixedInputs(CliTestCase):
    """Mixed exported with what real programs pass (and again with core_aten=True), each run by pt2diff."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        torch.manual_seed(0)
        model = Mixed().eval()
        big = torch.randn(1000, 8)
        cls.args = args = (big[10:14], Pair(torch.randn(8), torch.randn(8)),
                           collections.OrderedDict(offset=torch.randn(8)), torch.randn(4, 8).to(torch.float8_e4m3fn), 0.5, None)
        kwargs = {"shape": torch.Size([8, 4])}
        with torch.no_grad():
            cls.expected = (model(*args, **kwargs),)
        cls.out = os.path.join(cls.tmp, "mixed")
        cls.exported = pt2diff_capture.export_module(model, args, kwargs, out=cls.out)
        cls.saved = torch.load(cls.exported.inputs, weights_only=True)
        cls.pt2diff, cls.eager = pt2diff_eager(cls.cli, cls.exported.archive, cls.exported.inputs,
                                               os.path.join(cls.tmp, "outputs.pt"))
        cls.core = pt2diff_capture.export_module(model, args, kwargs, out=os.path.join(cls.tmp, "mixed_core"), core_aten=True)
        cls.core_pt2diff, cls.core_eager = pt2diff_eager(cls.cli, cls.core.archive, cls.core.inputs,
                                                         os.path.join(cls.tmp, "core_outputs.pt"))

    def test_wrote_archive_and_inputs(self):
        e = self.exported
        self.assertTrue(e.archive == self.out + ".pt2" and e.inputs == self.out + "_inputs.pt" and os.path.isfile(e.archive)
                        and os.path.isfile(e.inputs), f"wrote {e.archive} and {e.inputs}")

    def test_inputs_file_holds_plain_values(self):
        """A flat tuple of plain values, float8 as uint8."""
        kinds = [type(v).__name__ if not isinstance(v, torch.Tensor) else str(v.dtype) for v in self.saved]
        self.assertTrue(type(self.saved) is tuple
                        and kinds == ["torch.float32", "torch.float32", "torch.float32", "torch.float32",
                                      "torch.uint8", "float", "NoneType", "int", "int"],
                        f"inputs file: a flat tuple of plain values, float8 as uint8: {kinds}")

    def test_slice_saved_compact(self):
        self.assertEqual(self.saved[0].untyped_storage().nbytes(), 4 * 8 * 4, "the slice of a 1000-row buffer is saved compact")

    def test_float8_bytes_kept(self):
        self.assertTrue(torch.equal(self.saved[4], self.args[3].view(torch.uint8)), "the float8 input's bytes are kept exactly")

    def test_input_specs_name_float8(self):
        self.assertIn({"name": "q8", "dtype": "float8_e4m3fn", "shape": [4, 8], "saved_as": "uint8"}, self.exported.input_specs,
                      "input_specs name the float8 input and how it is saved")

    def test_archive_bitcasts_uint8_back(self):
        self.assertIn("aten.view.dtype", ops_of(self.exported.archive),
                      "the archive bitcasts the uint8 input back (aten.view.dtype)")

    def test_pt2diff_agrees(self):
        run = self.pt2diff
        self.assertTrue(run.returncode == 0 and last_line(run.stdout).startswith("AGREE"),
                        f"pt2diff --compiled eager: exit {run.returncode}, {last_line(run.stdout or run.stderr)}")

    def test_eager_outputs_bit_for_bit(self):
        self.assertTrue(same(self.eager, self.expected), "pt2diff's eager outputs equal the module's, bit for bit")

    def test_core_aten(self):
        """core_aten=True: linear decomposed, pt2diff runs it."""
        run, eager = self.core_pt2diff, self.core_eager
        self.assertTrue("aten.linear.default" in ops_of(self.exported.archive)
                        and "aten.linear.default" not in ops_of(self.core.archive) and run.returncode == 0
                        and eager is not None and torch.allclose(eager[0], self.expected[0], atol=1e-6),
                        f"core_aten=True: linear decomposed, pt2diff runs it ({last_line(run.stdout or run.stderr)})")


class PrimsOps(CliTestCase):
    def test_prims_become_aten(self):
        """Prims ops become ATen ops pt2diff runs."""
        x = torch.randn(3, 5)
        p = pt2diff_capture.export_module(Prims(), (x,), out=os.path.join(self.tmp, "prims"))
        inspect = subprocess.run([self.cli, "inspect", p.archive, p.inputs], capture_output=True, text=True)
        run, eager = pt2diff_eager(self.cli, p.archive, p.inputs, os.path.join(self.tmp, "prims_outputs.pt"))
        self.assertTrue(not any(op.startswith("prims.") for op in ops_of(p.archive))
                        and "unsupported ops: none" in inspect.stdout and same(eager, (Prims()(x),)),
                        f"prims ops become ATen ops pt2diff runs: {sorted(set(ops_of(p.archive)))}")


class Normalize(unittest.TestCase):
    def test_plain_values(self):
        """torch.Size, namedtuple -> tuple, OrderedDict -> dict, detached."""
        n = pt2diff_capture.normalize({"size": torch.Size([2, 3]), "pair": Pair(1, 2.5),
                                      "od": collections.OrderedDict(a=torch.ones(2, requires_grad=True))})
        self.assertTrue(type(n) is dict and n["size"] == (2, 3) and type(n["pair"]) is tuple and type(n["od"]) is dict
                        and not n["od"]["a"].requires_grad,
                        "normalize: torch.Size, namedtuple -> tuple, OrderedDict -> dict, detached")

    def test_rejects_a_set(self):
        with self.assertRaises(pt2diff_capture.CaptureError, msg="normalize rejects a set") as caught:
            pt2diff_capture.normalize((torch.ones(1), {1, 2}))
        err = caught.exception
        self.assertTrue(str(err).startswith("input[1] is a set: pt2diff inputs hold tensors"), f"normalize rejects a set: {err}")


class Save(CliTestCase):
    def test_ordered_dict_binds(self):
        """save() of an OrderedDict: pt2diff binds it."""
        saved = os.path.join(self.tmp, "mlp_inputs.pt")
        pt2diff_capture.save(collections.OrderedDict(x=torch.randn(4, 32)), saved)
        run = subprocess.run([self.cli, "inspect", self.fixture("mlp.pt2"), saved], capture_output=True, text=True)
        self.assertTrue(run.returncode == 0 and "inputs bind: yes" in run.stdout, "save() of an OrderedDict: pt2diff binds it")


TINY_MODELS = textwrap.dedent("""
    import torch
    def make():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.GELU()), (torch.randn(3, 4),)
    def step():
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.BatchNorm1d(2))
        return model, (torch.randn(3, 4),), torch.nn.functional.cross_entropy, (torch.tensor([0, 1, 1]),)
""")


class Commands(CliTestCase):
    """`python -m pt2diff_capture export` and `train` on a module's factory, their archives run by pt2diff."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = cls.tmp
        with open(os.path.join(tmp, "tiny_models.py"), "w") as f:
            f.write(TINY_MODELS)
        cls.export = capture_cli("export", "--module", "tiny_models:make", "--out", "tiny", "--core-aten", cwd=tmp)
        cls.export_pt2diff, _ = pt2diff_eager(cls.cli, os.path.join(tmp, "tiny.pt2"), os.path.join(tmp, "tiny_inputs.pt"),
                                              os.path.join(tmp, "tiny_outputs.pt"))
        # `train`: one training step; pt2diff names its loss, gradients and the running statistics it writes.
        cls.train = capture_cli("train", "--module", "tiny_models:step", "--out", "step", cwd=tmp)
        cls.train_pt2diff = subprocess.run([cls.cli, os.path.join(tmp, "step.pt2"), os.path.join(tmp, "step_inputs.pt"),
                                            "--compiled", "eager"], capture_output=True, text=True)

    def test_export(self):
        cli = self.export
        self.assertTrue(cli.returncode == 0 and cli.stdout.startswith("wrote tiny.pt2 (") and self.export_pt2diff.returncode == 0,
                        f"python -m pt2diff_capture export --module tiny_models:make: {cli.stdout.strip() or cli.stderr.strip()}")

    def test_train(self):
        """pt2diff names the step's loss, gradients and the running statistics it writes."""
        cli, run = self.train, self.train_pt2diff
        named = [n for n in ("loss", "0.weight.grad", "0.bias.grad", "1.weight.grad", "1.bias.grad",
                             "buffer '1.running_mean' after the graph") if n in run.stdout]
        self.assertTrue(cli.returncode == 0 and cli.stdout.startswith("wrote step.pt2 (") and run.returncode == 0
                        and len(named) == 6,
                        f"python -m pt2diff_capture train --module tiny_models:step: {cli.stdout.strip() or cli.stderr.strip()}; "
                        f"pt2diff names {named}")


if __name__ == "__main__":
    unittest.main()
