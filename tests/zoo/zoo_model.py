#!/usr/bin/env python3
"""The real-model zoo (fixtures/zoo/, made by fixtures/make_zoo.py) through pt2diff: a ctest per model and check.

    zoo_model.py PT2DIFF ZOO_DIR MODEL CHECK [FORM...]

FORM: "training" (or "": training IR, MODEL.pt2) and/or "core" (MODEL_core.pt2); default both. CHECK is one of
  run       `pt2diff inspect` names no unsupported op and binds the inputs; `pt2diff --compiled eager
            --save-outputs` gives eager outputs bit-identical to PyTorch eager (`ep.module()` under
            no_grad, run here now) and fp64 outputs within 1e-12 of each output's scale of the fp64
            reference (fixtures/reference.py: the same graph run by torch.fx in float64).
  inductor  `pt2diff` with the real Inductor agrees (exit 0: no false alarm), and per output it prints
            RMSE(eager, fp64), RMSE(compiled, fp64) and their ratio, from the JSON report. With
            PT2DIFF_ZOO_TORCH_COMPILE=1 the compiled outputs must also be bit-identical to
            torch.compile(ep.module()) under no_grad (off in CI: it doubles the check's time).
  planted   tests/zoo/planted_worker.py plays the compiled side: the real Inductor with a post-grad pass
            that computes one kind of op in lower precision (PLANTS below, per model and form). pt2diff
            must report the divergence (exit 1) and localize it to one op: the first node of that kind
            in the graph (the earliest place the bug can show). ctest runs one form per test
            (zoo_MODEL_planted: training, zoo_MODEL_planted_core: core).
Only torch is needed (the venv's): the archives are committed, the packages that made them are not.
Prints one line per finding and, last, "zoo MODEL CHECK: ok" or "zoo MODEL CHECK: FAILED".
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures"))
from reference import SEED, fp64_reference  # noqa: E402

MATMULS = ["aten.linear.default", "aten.addmm.default", "aten.mm.default", "aten.bmm.default", "aten.matmul.default"]
CONVS = ["aten.conv2d.default", "aten.convolution.default"]
#: model -> form ("" training IR, "core" core ATen) -> (what planted_worker.py breaks, the ops whose first node
#: in that form it breaks[, extra flags]). Every model is planted on both forms (ctest zoo_MODEL_planted and
#: zoo_MODEL_planted_core). MobileNetV3 is judged by cosine similarity: its random-init logits are ~1e-9, under
#: the same() rule's absolute slack, so same() passes even a 1e5 times larger error than eager's (issue 16's
#: vacuous verdicts).
PLANTS = {
    "bert": {"": ("matmul", MATMULS), "core": ("matmul", MATMULS)},
    "gpt2": {"": ("matmul", MATMULS), "core": ("matmul", MATMULS)},
    "llama": {"": ("matmul", MATMULS), "core": ("matmul", MATMULS)},
    # The training IR is one top-level wrap_with_autocast node (named to_13) whose body is the whole model:
    # localization names that region, then goes inside it (the region inlined, each op under its autocast)
    # to the first linear of the body (docs/zoo.md). The core form has autocast's casts written out and
    # localizes to the first mm.
    "llama_autocast": {"": ("matmul_bf16", MATMULS), "core": ("matmul_bf16", MATMULS)},
    "vit": {"": ("conv", CONVS), "core": ("conv", CONVS)},
    "resnet18": {"": ("conv", CONVS), "core": ("conv", CONVS)},
    "mobilenet_v3": {"": ("conv", CONVS, ["--rule", "cosine:0.99999"]), "core": ("conv", CONVS, ["--rule", "cosine:0.99999"])},
    "transformer_encoder": {"": ("matmul", MATMULS), "core": ("matmul", MATMULS)},
    # The training IR is one aten.lstm node (the whole recurrence) and the head's linear. Inductor calls
    # aten.lstm whole (no matrix product of the cell reaches the post-grad pass), so the only op the matmul
    # bug breaks in that form is the head's linear: that node is the culprit, and the first linear is it.
    # In the core form the cell is written out and the first bmm is the culprit.
    "lstm": {"": ("matmul", ["aten.linear.default"]), "core": ("matmul", MATMULS)},
    "conv_bf16": {"": ("conv_bf16", CONVS), "core": ("conv_bf16", CONVS)},
}


def archive(zoo, model, form):
    return os.path.join(zoo, f"{model}{'_' + form if form else ''}.pt2"), os.path.join(zoo, f"{model}_inputs.pt")


def eager(graph, inputs_file):
    ep = torch.export.load(graph)
    args = torch.load(inputs_file, weights_only=True)
    with torch.no_grad():
        torch.manual_seed(SEED)
        out = ep.module()(*args)
    return ep, args, [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def bit_identical(got, want):
    return got is not None and got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)


def max_diff(got, want):
    return (got.double() - want.double()).abs().max().item() if got is not None and got.shape == want.shape else float("nan")


def check_run(pt2diff, name, graph, inputs_file, tmp):
    failures = 0
    run = subprocess.run([pt2diff, "inspect", graph, inputs_file], capture_output=True, text=True)
    ok = run.returncode == 0 and "unsupported ops: none" in run.stdout and "inputs bind: yes" in run.stdout
    print(f"{name}: inspect exit {run.returncode}, {'no unsupported op, inputs bind' if ok else 'WRONG: ' + run.stdout[-300:] + run.stderr.strip()}")
    failures += not ok
    saved = os.path.join(tmp, name + "_outputs.pt")
    start = time.monotonic()
    run = subprocess.run([pt2diff, graph, inputs_file, "--compiled", "eager", "--no-exploded", "--no-localize", "--save-outputs", saved],
                         capture_output=True, text=True)
    seconds = time.monotonic() - start
    if run.returncode != 0:
        print(f"{name}: pt2diff --compiled eager exited {run.returncode}: {run.stderr.strip()}")
        return failures + 1
    _, native, fp64 = torch.load(saved, weights_only=True)
    ep, args, want = eager(graph, inputs_file)
    reference = [t for t in fp64_reference(ep, args, {}) if isinstance(t, torch.Tensor)]
    for i, (got, w) in enumerate(zip(native, want)):
        same = bit_identical(got, w)
        print(f"{name}: output {i} {tuple(w.shape)} {w.dtype}: eager run {'bit-identical to PyTorch eager' if same else f'DIFFERS (max |diff| {max_diff(got, w):.3g})'}")
        failures += not same
    for i, (got, w) in enumerate(zip(fp64, reference)):
        scale = max(w.abs().max().item(), 1e-300)
        rel = max_diff(got, w) / scale
        ok = got.dtype == w.dtype and rel <= 1e-12
        print(f"{name}: output {i} fp64 run {'matches' if ok else 'DIFFERS from'} the fp64 reference (relative {rel:.2g})")
        failures += not ok
    failures += len(native) != len(want) or len(fp64) != len(reference)
    print(f"{name}: eager + fp64 runs (lockstep, per-node errors) in {seconds:.2f} s")
    return failures


def check_inductor(pt2diff, name, graph, inputs_file, tmp):
    saved, report = os.path.join(tmp, name + "_outputs.pt"), os.path.join(tmp, name + ".json")
    run = subprocess.run([pt2diff, graph, inputs_file, "--no-exploded", "--save-outputs", saved, "--json", report],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{name}: pt2diff with Inductor exited {run.returncode} (expected 0: agree): {run.stdout[-600:]} {run.stderr.strip()}")
        return 1
    failures = 0
    r = json.load(open(report))
    graph_compile = next(c for c in r["compiles"] if c["what"] == "graph")
    print(f"{name}: agree; Inductor compile {graph_compile.get('compile_seconds', float('nan')):.2f} s, whole run {r['seconds']:.2f} s")
    for o in r["outputs"]:
        e, c = o["eager_to_fp64"]["rmse"], o["compiled_to_fp64"]["rmse"]
        ratio = c / e if e else float("inf") if c else 1.0
        print(f"{name}: output {o['name']}: rmse eager-fp64 {e:.3g}, compiled-fp64 {c:.3g}, ratio {ratio:.3g}")
    if os.environ.get("PT2DIFF_ZOO_TORCH_COMPILE"):
        # Off by default (CI time): torch.compile on each model doubles the check's cost, and the Inductor
        # backend's bit-identity with torch.compile is tested on every fixture (inductor_agreement.py).
        compiled, _, _ = torch.load(saved, weights_only=True)
        ep, args, _ = eager(graph, inputs_file)
        torch._dynamo.reset()
        with torch.no_grad():
            expected = torch.compile(ep.module())(*args)
        expected = [t for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
        for i, (got, want) in enumerate(zip(compiled, expected)):
            same = bit_identical(got, want)
            print(f"{name}: output {i}: compiled {'bit-identical to torch.compile' if same else f'DIFFERS from torch.compile (max |diff| {max_diff(got, want):.3g})'}")
            failures += not same
        failures += len(compiled) < len(expected)
    return failures


def first_in_region(graph, ops):
    """The first node of one of `ops` in the body of the archive's top-level autocast region, under the name
    pt2diff gives it once inlined (graphs/inline_region.h: "<name>_<region>" when the top level has the name);
    None when the graph has no such region."""
    import torch
    ep = torch.export.load(graph)
    top = {n.name for n in ep.graph.nodes}
    region = next((n for n in ep.graph.nodes if n.target is torch.ops.higher_order.wrap_with_autocast), None)
    if region is None:
        return None
    body = getattr(ep.graph_module, region.args[4].target).graph
    first = next((n.name for n in body.nodes if n.op == "call_function" and str(n.target) in ops), None)
    return None if first is None else (f"{first}_{region.name}" if first in top else first)


def check_planted(pt2diff, model, form, name, graph, inputs_file, tmp):
    plant, ops, *extra = PLANTS[model][form]
    worker = os.path.join(HERE, "planted_worker.py")
    report = os.path.join(tmp, name + ".json")
    env = dict(os.environ, PT2DIFF_PLANT=plant)
    run = subprocess.run([pt2diff, graph, inputs_file, "--compiled", f"external:{sys.executable} {worker}", "--json", report,
                          *(extra[0] if extra else [])], capture_output=True, text=True, env=env)
    if run.returncode != 1:
        print(f"{name}: planted {plant}: expected exit 1 (diverged), got {run.returncode}: {run.stdout[-600:]} {run.stderr.strip()}")
        return 1
    r = json.load(open(report))
    loc = r["localization"] or {}
    culprit = loc.get("culprit", {})
    first = next((n["name"] for n in r["nodes"] if n["op"] in ops), None)
    inside = first is None and r["autocast"]  # the op is inside an autocast region: localization goes in
    if inside:
        first = first_in_region(graph, ops)
    ok = culprit.get("kind") == "single_op" and culprit.get("nodes") == [first] and \
        (not inside or culprit.get("summary", "").startswith("inside the autocast region"))
    print(f"{name}: planted {plant}: {culprit.get('kind')} {culprit.get('nodes')} after {loc.get('compiles')} compiles "
          f"(budget {loc.get('budget')}), whole run {r['seconds']:.1f} s; first {'/'.join(o.split('.')[1] for o in ops)} "
          f"{'inside the autocast region ' if inside else ''}is {first}: "
          f"{'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


def main():
    pt2diff, zoo, model, check = sys.argv[1:5]
    forms = sys.argv[5:] or ["", "core"]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for form in forms:
            form = "" if form in ("", "training") else form
            graph, inputs_file = archive(zoo, model, form)
            name = os.path.basename(graph)[:-4]
            if check == "run":
                failures += check_run(pt2diff, name, graph, inputs_file, tmp)
            elif check == "inductor":
                failures += check_inductor(pt2diff, name, graph, inputs_file, tmp)
            elif check == "planted":
                failures += check_planted(pt2diff, model, form, name, graph, inputs_file, tmp)
            else:
                print(f"zoo_model.py: unknown check '{check}' (run, inductor, planted)")
                return 2
    print(f"zoo {model} {check}: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
