"""Training steps (fixtures/training, fixtures/make_training_fixtures.py) through pt2diff and the real Inductor.
A ctest, label inductor (tests/cli_case.py says how to run it alone).

- Capture: the capture is the step PyTorch runs: `--compiled eager --save-outputs` gives the loss, every gradient and
  the running statistics bit-identical to the same model's forward, loss and `loss.backward()` in PyTorch eager, run
  here now (the same ATen ops in the same order: autograd's own backward ops).
- CleanSteps: convbn (batch norm in train mode, its running statistics judged after the step), mlp_ln_dx (mlp_ln
  exported now with its input requiring grad: the step returns x.grad, judged by its input's name) and, on CUDA,
  llama_bf16 agree with the stock Inductor at the loss, every gradient, every written buffer and every node of the node
  verdict. mlp_ln_dx's x.grad is bit-identical to PyTorch's too.
- PlantedBackwardBugs: planted bugs in Inductor's decomposition of a backward op, or its lowering of mm at the weight
  gradient's shape (tests/engine/localize/planted_lowering.py), each named at its backward node with the forward node
  it is the gradient of and its source line: in mlp_ln native_layer_norm_backward (the gradient of a norm),
  gelu_backward (of an activation) and mm at [16, 8] (of a matmul: fc1's weight gradient); native_batch_norm_backward
  in convbn; _softmax_backward_data in llama_bf16 (the gradient of attention's softmax; bf16 absorbs it at the
  outputs: the node verdict names it). Runs whose gradients are small enough for rule same's atol to hide 5% use
  --rule relative. On native_layer_norm_backward, --workaround: the smallest eager set is that backward op, verified
  by a compile of the step with it eager, and the program change disables the module ln (its forward and so its
  backward).
- The kernel table of the whole step (AOTAutograd's forward and backward kernels): on a clean step every judged buffer
  passes, backward nodes' among them; on mlp_ln's planted bugs its first failing kernel holds the backward op and the
  search inside that kernel names it.
Every report is valid against docs/report.schema.json.

On CUDA (PT2DIFF_TEST_DEVICE=cuda, scripts/gpu_test.sh) mlp_ln and convbn are exported there, in bfloat16, at test
time (the same models and inputs, moved), and llama_bf16 (exported on the CPU, the zoo extra is not needed) runs
with --device cuda; the bit-exact check is mlp_ln's (cuDNN's convolution backward may pick another algorithm).
"""
import json
import os
import subprocess
import sys
import unittest

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import DEVICE, CliTestCase, Runs  # noqa: E402

BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")


def steps(fixtures, tmp, names):
    """NAME -> (archive, inputs, the model or None) for each of NAMES: the fixtures on the CPU; on CUDA, mlp_ln and
    convbn exported there in bfloat16 now. Also mlp_ln_dx, exported now on the device: mlp_ln whose input requires
    grad, so that the step returns x.grad too."""
    out = {n: (os.path.join(fixtures, "training", n + ".pt2"), os.path.join(fixtures, "training", n + "_inputs.pt"), None)
           for n in ("mlp_ln", "convbn", "llama_bf16")}
    for path in (fixtures, os.path.join(fixtures, "..", "python")):
        if path not in sys.path:
            sys.path.insert(0, path)
    import make_training_fixtures as m
    from pt2diff_capture.training import export_training_step
    dtype = torch.float32 if DEVICE == "cpu" else torch.bfloat16
    # The fixtures' weights, every run: make_training_fixtures.main() seeds 0 and makes the models in this order. Unseeded,
    # each run judged a freshly drawn model, and about 4% of bf16 ConvBN draws put a ReLU input within bf16 rounding of
    # zero, where eager and Inductor decide it differently (docs/training.md, "A clean step called diverged").
    torch.manual_seed(0)
    for name, make in m.cases().items():
        if name == "llama_bf16" or (DEVICE == "cpu" and name != "mlp_ln"):
            continue
        model, args, loss_fn, targets = make()  # each one, in order: their inputs come from one generator
        model = model.to(DEVICE, dtype).train()
        args = tuple(a.to(DEVICE, dtype) for a in args)
        targets = tuple(t.to(DEVICE, dtype if t.is_floating_point() else t.dtype) for t in targets)
        if DEVICE != "cpu" and name in names:
            e = export_training_step(model, args, loss_fn, targets=targets, out=os.path.join(tmp, name))
            out[name] = (e.archive, e.inputs, (model, args, loss_fn, targets))
        if name == "mlp_ln" and name + "_dx" in names:
            args = tuple(a.clone().requires_grad_(True) for a in args)
            e = export_training_step(model, args, loss_fn, targets=targets, out=os.path.join(tmp, name + "_dx"))
            out[name + "_dx"] = (e.archive, e.inputs, (model, args, loss_fn, targets))
    return {n: out[n] for n in names}


#: Planted ops that the forward also runs, at a shape only the backward gives them: mm at [16, 8] is fc1's weight
#: gradient (the forward's linears are addmm).
PLANT_SHAPES = {"mm": "16,8"}


def node(r, name):
    return next((n for n in r["nodes"] if n["name"] == name), None)


def eager_step(fixtures, name, step):
    """The fixture's model, loss and backward in PyTorch eager, from the archive's weights (or the model exported
    on CUDA): the loss and each parameter's gradient, by the names pt2diff gives them."""
    if step[2] is not None:
        model, (x,), loss_fn, (target,) = step[2]
    else:
        sys.path.insert(0, fixtures)
        import make_training_fixtures as m
        sys.path.pop(0)
        ep = torch.export.load(step[0])
        x, target = torch.load(step[1], weights_only=True)
        model, loss_fn = {"mlp_ln": (m.MLP, F.mse_loss), "convbn": (m.ConvBN, F.cross_entropy)}[name]
        model = model().train()
        model.load_state_dict(ep.state_dict)
    loss = loss_fn(model(x), target)
    loss.backward()
    out = {"loss": loss.detach()}
    out.update({f"{k}.grad": p.grad.cpu() for k, p in model.named_parameters()})
    if x.requires_grad:  # the step's input gradient, named by its input
        out["x.grad"] = x.grad.cpu()
        x.grad = None
    model.zero_grad()
    return {k: v.cpu() for k, v in out.items()}


class TrainingStep(CliTestCase):
    """What the classes share: the steps NAMES (exported, where they are, in setUpClass) and a pt2diff run of one."""

    NAMES = ()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.step = steps(cls.fixtures, cls.tmp, cls.NAMES)

    @classmethod
    def run_step(cls, name, *flags, plant=None, shape=None):
        """pt2diff on the step NAME, with the stock Inductor or the bug planted in op PLANT (at SHAPE): (the process,
        the report or None)."""
        report = os.path.join(cls.tmp, f"{name}-{plant or 'stock'}.json")
        env = dict(os.environ)
        compiled = ["--compiled", "inductor"]
        if plant:
            env.update(PT2DIFF_PLANT_OP=plant, PT2DIFF_PLANT_ERROR="0.05", PT2DIFF_PLANT_SHAPE=shape or "")
            compiled = ["--compiled", f"external:{sys.executable} {BUG_WORKER}"]
        if "--compiled" in flags:
            compiled = []
        archive, inputs, _ = cls.step[name]
        p = subprocess.run([cls.cli, archive, inputs, "--json", report, "--device", cls.device, *compiled, *flags],
                           capture_output=True, text=True, env=env)
        r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
        return p, r


class Capture(TrainingStep):
    """The capture: pt2diff's eager run of the step is PyTorch's training step, bit for bit (one run per step, made
    on first use)."""

    NAMES = ("mlp_ln", "mlp_ln_dx", "convbn") if DEVICE == "cpu" else ("mlp_ln", "mlp_ln_dx")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        def run(name):
            saved = os.path.join(cls.tmp, name + ".outputs.pt")
            return (*cls.run_step(name, "--compiled", "eager", "--save-outputs", saved), saved)

        cls.runs = Runs(run)

    def check_step(self, name):
        if name not in self.NAMES:
            self.skipTest(f"{name}'s capture is judged bit for bit on the CPU only (cuDNN's convolution backward may pick "
                          "another algorithm)")
        p, r, saved = self.runs[name]
        self.assertTrue(p.returncode == 0 and r is not None,
                        f"{name}: the step runs eagerly (exit {p.returncode}) {p.stderr[-300:]}")
        _, eager, _ = torch.load(saved, weights_only=True)
        want = eager_step(self.fixtures, name, self.step[name])
        names = [o["name"] for o in r["outputs"]]
        got = dict(zip(names[:len(eager)], eager))
        self.assertTrue(set(want) <= set(names),
                        f"{name}: the outputs are the loss and every parameter's gradient by name ({names})")
        for k, v in want.items():
            with self.subTest(k):
                self.assertTrue(k in got and torch.equal(got[k], v), f"{name}: {k} bit-identical to PyTorch's backward")

    def test_mlp_ln(self):
        """mlp_ln's loss and gradients are PyTorch's, bit for bit."""
        self.check_step("mlp_ln")

    def test_mlp_ln_dx(self):
        """mlp_ln_dx's loss, gradients and x.grad are PyTorch's, bit for bit."""
        self.check_step("mlp_ln_dx")

    def test_convbn(self):
        """convbn's loss, gradients and running statistics are PyTorch's, bit for bit (on the CPU)."""
        self.check_step("convbn")


class CleanSteps(TrainingStep):
    """Clean: the stock Inductor agrees at every gradient, buffer and node (one run per step, made on first
    use). llama_bf16's clean step on the GPU only: on the 2-core CPU its cold compiles cost the suite 40 s, and its planted
    run (PlantedBackwardBugs) judges every other node of it (measured clean by hand: docs/training.md)."""

    NAMES = ("convbn", "mlp_ln_dx") if DEVICE == "cpu" else ("convbn", "mlp_ln_dx", "llama_bf16")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = Runs(cls.run_step)

    def check_step(self, name):
        """The checks of every clean step; returns its report."""
        if name not in self.NAMES:
            self.skipTest(f"{name}'s clean step is judged on the GPU only (its cold compiles cost the CPU suite 40 s)")
        p, r = self.runs[name]
        self.assertTrue(p.returncode == 0 and r is not None and r["verdict"] == "agree",
                        f"{name}: a clean step agrees with the stock Inductor (exit {p.returncode}) {p.stderr[-300:]}")
        self.assertValidReport(r)
        grads = [o for o in r["outputs"] if o["name"].endswith(".grad")]
        self.assertTrue(len(grads) >= 6 and all(o["pass"] for o in r["outputs"]),
                        f"{name}: the loss, {len(grads)} gradients and the buffers pass")
        self.assertEqual(r["node_verdict"]["level"], "pass", f"{name}: every node passes the node verdict")
        # The kernel table of the whole step: AOTAutograd's forward and backward kernels, each buffer named by the
        # archive's node (a backward node by its own name), every judged one passing.
        k = r.get("kernels") or {}
        judged = [b for kc in k.get("kernels") or [] for b in kc["buffers"] if b["judged"]]
        backward = [b["node"] for b in judged if (node(r, b["node"]) or {}).get("backward_of")]
        self.assertTrue(k.get("available") and judged and backward and all(b["pass"] for b in judged),
                        f"{name}: the step's kernel table judges {len(judged)} buffers, {len(backward)} of backward nodes "
                        f"({backward[:4]}), all passing ({k.get('unavailable')})")
        return r

    def test_convbn(self):
        """convbn agrees; the running statistics are judged after the step."""
        r = self.check_step("convbn")
        stats = [o["name"] for o in r["outputs"] if o["name"].startswith("buffer 'bn.running")]
        self.assertEqual(len(stats), 2, f"convbn: the running statistics are judged after the step ({stats})")

    def test_mlp_ln_dx(self):
        """mlp_ln_dx agrees; x.grad is judged as the input's gradient of the whole step (compiled as torch.compile
        compiles one)."""
        r = self.check_step("mlp_ln_dx")
        dx = next((o for o in r["outputs"] if o["name"] == "x.grad"), {})
        self.assertTrue(dx.get("role") == "gradient_to_user_input of x" and dx.get("pass"),
                        f"mlp_ln_dx: x.grad judged as the input's gradient of the whole step: {dx.get('role')} {dx.get('pass')}")

    def test_llama_bf16(self):
        """llama_bf16 agrees (on the GPU)."""
        self.check_step("llama_bf16")


class PlantedBackwardBugs(TrainingStep):
    """Planted in a backward op's decomposition: named at the backward node, with its forward node and line (one run
    per bug, made on first use: a ctest of one method pays for its bug only)."""

    NAMES = ("mlp_ln", "convbn", "llama_bf16")
    # planted op -> the step, the flags, the forward node it is the gradient of
    CASES = {"native_layer_norm_backward": ("mlp_ln", ("--workaround",), "native_layer_norm"),
             "gelu_backward": ("mlp_ln", ("--rule", "relative"), "gelu"),
             "mm": ("mlp_ln", ("--rule", "relative"), "addmm"),
             "native_batch_norm_backward": ("convbn", ("--rule", "relative"), "native_batch_norm"),
             "_softmax_backward_data": ("llama_bf16", (), "_softmax")}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.runs = Runs(lambda op: cls.run_step(cls.CASES[op][0], *cls.CASES[op][1], plant=op, shape=PLANT_SHAPES.get(op)))

    def check_case(self, op):
        name, flags, forward = self.CASES[op]
        p, r = self.runs[op]
        self.assertIsNotNone(r, f"{name}, {op} planted: a report (exit {p.returncode}) {p.stderr[-300:]}")
        self.assertValidReport(r)
        c = (r.get("localization") or {}).get("culprit") or {}
        first = node(r, (c.get("nodes") or [""])[0])
        self.assertTrue(c.get("kind") == "single_op" and first is not None and first["op"] == f"aten.{op}.default"
                        and first.get("backward_of"),
                        f"{name}: the culprit is the backward op {op} alone ({c.get('kind')} {c.get('nodes')})")
        self.assertTrue(first.get("backward_of", "").startswith(forward),
                        f"{name}: it is the gradient of {forward} (backward_of {first.get('backward_of')})")
        self.assertTrue(c["sources"][0].startswith(f"gradient of {first.get('backward_of')} at make_training_fixtures.py:"),
                        f"{name}: its source names the forward node and the model's line ({c['sources'][0][:90]})")
        k = r.get("kernels") or {}
        if name == "mlp_ln":
            # The kernel table of the step: the first failing kernel holds the backward op (fused with its neighbours
            # in AOTAutograd's backward graph; on CUDA gelu_backward's buffer stays inside the Triton kernel, whose
            # first failing buffer is then native_layer_norm_backward's), and the search inside it names the op.
            inside = k.get("inside") or {}
            failing = (k.get("kernels") or [])[k["first_failing"]] if k.get("first_failing") is not None else {}
            self.assertTrue(first["name"] in failing.get("nodes", []) and inside.get("op") == first["name"],
                            f"{name}: the step's first failing kernel holds {first['name']} and the search inside it names "
                            f"it ({failing.get('name')} {failing.get('nodes')}, inside {inside.get('kind')} {inside.get('op')})")
        else:
            self.assertTrue(k.get("available"), f"{name}: the step's kernel table is made ({k.get('unavailable')})")
        return r, first

    def test_native_layer_norm_backward(self):
        """mlp_ln: named at the gradient of native_layer_norm; --workaround leaves that backward op eager, verified,
        as a change to the module ln."""
        r, first = self.check_case("native_layer_norm_backward")
        w = r.get("workaround") or {}
        eager_nodes = [n["node"] for n in w.get("nodes") or []]
        self.assertTrue(w.get("verified") and eager_nodes == [first["name"]]
                        and any('get_submodule("ln")' in line for line in w.get("lines") or []),
                        f"mlp_ln: --workaround leaves the backward op eager, verified, as a change to the module ln: "
                        f"{eager_nodes} {w.get('summary')}")

    def test_gelu_backward(self):
        """mlp_ln: named at the gradient of gelu (an activation)."""
        self.check_case("gelu_backward")

    def test_mm_at_the_weight_gradient(self):
        """mlp_ln: mm at [16, 8], fc1's weight gradient, named at the gradient of addmm."""
        self.check_case("mm")

    def test_native_batch_norm_backward(self):
        """convbn: named at the gradient of native_batch_norm."""
        self.check_case("native_batch_norm_backward")

    def test_softmax_backward_data(self):
        """llama_bf16: named at the gradient of attention's softmax (bf16 absorbs it at the outputs)."""
        self.check_case("_softmax_backward_data")


if __name__ == "__main__":
    unittest.main()
