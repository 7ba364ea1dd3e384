#!/usr/bin/env python3
"""Training steps (fixtures/training, fixtures/make_training_fixtures.py) through pt2diff and the real Inductor.
A ctest, label inductor.

    training_inductor.py PT2DIFF FIXTURES_DIR

- The capture is the step PyTorch runs: `--compiled eager --save-outputs` gives the loss, every gradient and the
  running statistics bit-identical to the same model's forward, loss and `loss.backward()` in PyTorch eager, run
  here now (the same ATen ops in the same order: autograd's own backward ops).
- Clean: convbn (batch norm in train mode, its running statistics judged after the step) and llama_bf16 agree with
  the stock Inductor at the loss, every gradient, every written buffer and every node of the node verdict.
- Planted bugs in Inductor's decomposition of a backward op (tests/engine/localize/planted_lowering.py), each named
  at its backward node with the forward node it is the gradient of and its source line:
  native_layer_norm_backward in mlp_ln (the gradient of a norm), native_batch_norm_backward in convbn (judged with
  --rule relative: its gradients are small enough for rule same's atol to hide 5%), _softmax_backward_data in
  llama_bf16 (the gradient of attention's softmax; bf16 absorbs it at the outputs: the node verdict names it).
Every report is valid against docs/report.schema.json.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from report_checks import Checks  # noqa: E402

BUG_WORKER = os.path.join(HERE, "lowering_bug_worker.py")
DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")


def run(pt2diff, fixtures, name, tmp, *flags, plant=None):
    report = os.path.join(tmp, f"{name}-{plant or 'stock'}.json")
    env = dict(os.environ)
    compiled = ["--compiled", "inductor"]
    if plant:
        env.update(PT2DIFF_PLANT_OP=plant, PT2DIFF_PLANT_ERROR="0.05")
        compiled = ["--compiled", f"external:{sys.executable} {BUG_WORKER}"]
    if "--compiled" in flags:
        compiled = []
    p = subprocess.run([pt2diff, os.path.join(fixtures, "training", name + ".pt2"),
                        os.path.join(fixtures, "training", name + "_inputs.pt"), "--json", report, "--device", DEVICE,
                        *compiled, *flags], capture_output=True, text=True, env=env)
    r = json.load(open(report)) if p.returncode in (0, 1) and os.path.exists(report) else None
    return p, r


def node(r, name):
    return next((n for n in r["nodes"] if n["name"] == name), None)


def eager_step(fixtures, name):
    """The fixture's model, loss and backward in PyTorch eager, from the archive's weights: the loss and each
    parameter's gradient, by the names pt2diff gives them."""
    sys.path.insert(0, fixtures)
    import make_training_fixtures as m
    sys.path.pop(0)
    ep = torch.export.load(os.path.join(fixtures, "training", name + ".pt2"))
    x, target = torch.load(os.path.join(fixtures, "training", name + "_inputs.pt"), weights_only=True)
    model, loss_fn = {"mlp_ln": (m.MLP, F.mse_loss), "convbn": (m.ConvBN, F.cross_entropy)}[name]
    model = model().train()
    model.load_state_dict(ep.state_dict)
    loss = loss_fn(model(x), target)
    loss.backward()
    out = {"loss": loss.detach()}
    out.update({f"{k}.grad": p.grad for k, p in model.named_parameters()})
    return out


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    checks = Checks()
    expect = checks.expect
    with tempfile.TemporaryDirectory() as tmp:
        # The capture: pt2diff's eager run of the step is PyTorch's training step, bit for bit.
        for name in ("mlp_ln", "convbn"):
            saved = os.path.join(tmp, name + ".outputs.pt")
            p, r = run(pt2diff, fixtures, name, tmp, "--compiled", "eager", "--save-outputs", saved)
            expect(p.returncode == 0 and r is not None, f"{name}: the step runs eagerly (exit {p.returncode}) {p.stderr[-300:]}")
            if r is None:
                continue
            _, eager, _ = torch.load(saved, weights_only=True)
            want = eager_step(fixtures, name)
            names = [o["name"] for o in r["outputs"]]
            got = dict(zip(names[:len(eager)], eager))
            expect(set(want) <= set(names),
                   f"{name}: the outputs are the loss and every parameter's gradient by name ({names})")
            for k, v in want.items():
                expect(k in got and torch.equal(got[k], v), f"{name}: {k} bit-identical to PyTorch's backward")
        # Clean: the stock Inductor agrees at every gradient, buffer and node.
        for name in ("convbn", "llama_bf16"):
            p, r = run(pt2diff, fixtures, name, tmp)
            expect(p.returncode == 0 and r is not None and r["verdict"] == "agree",
                   f"{name}: a clean step agrees with the stock Inductor (exit {p.returncode}) {p.stderr[-300:]}")
            if r is None:
                continue
            checks.validate(r)
            grads = [o for o in r["outputs"] if o["name"].endswith(".grad")]
            expect(len(grads) >= 6 and all(o["pass"] for o in r["outputs"]),
                   f"{name}: the loss, {len(grads)} gradients and the buffers pass")
            expect(r["node_verdict"]["level"] == "pass", f"{name}: every node passes the node verdict")
            if name == "convbn":
                stats = [o["name"] for o in r["outputs"] if o["name"].startswith("buffer 'bn.running")]
                expect(len(stats) == 2, f"{name}: the running statistics are judged after the step ({stats})")
        # Planted in a backward op's decomposition: named at the backward node, with its forward node and line.
        for name, op, flags, forward in (("mlp_ln", "native_layer_norm_backward", (), "native_layer_norm"),
                                         ("convbn", "native_batch_norm_backward", ("--rule", "relative"), "native_batch_norm"),
                                         ("llama_bf16", "_softmax_backward_data", (), "_softmax")):
            p, r = run(pt2diff, fixtures, name, tmp, *flags, plant=op)
            expect(r is not None, f"{name}, {op} planted: a report (exit {p.returncode}) {p.stderr[-300:]}")
            if r is None:
                continue
            checks.validate(r)
            c = (r.get("localization") or {}).get("culprit") or {}
            first = node(r, (c.get("nodes") or [""])[0])
            print(f"  {name}: {r['verdict']}, culprit {c.get('kind')} {c.get('nodes')}: {(c.get('sources') or [''])[0]}")
            expect(c.get("kind") == "single_op" and first is not None and first["op"] == f"aten.{op}.default",
                   f"{name}: the culprit is the backward op {op} alone ({c.get('kind')} {c.get('nodes')})")
            if first is not None:
                expect(first.get("backward_of", "").startswith(forward),
                       f"{name}: it is the gradient of {forward} (backward_of {first.get('backward_of')})")
                expect(c["sources"][0].startswith(f"gradient of {first.get('backward_of')} at make_training_fixtures.py:"),
                       f"{name}: its source names the forward node and the model's line ({c['sources'][0][:90]})")
    return checks.finish("training steps: captured bit-exact, clean steps agree, planted backward bugs named")


if __name__ == "__main__":
    sys.exit(main())
