#!/usr/bin/env python3
"""pt2diff's Inductor backend gives the numbers Python's torch.compile gives (tests, run by ctest).

    inductor_agreement.py PT2DIFF FIXTURES_DIR NAME...

For each fixture: `pt2diff NAME.pt2 NAME_inputs.pt --save-outputs F --json R`, whose node verdict must be
`pass` (clean Inductor stands out at no node), then in this
process `torch.compile(ep.module())` on the same inputs under torch.no_grad() (the worker compiles
for inference), and the compiled outputs must be equal bit for bit. With PT2DIFF_TEST_DEVICE=cuda
(scripts/gpu_test.sh) both compile for the GPU: `--device cuda`, and the module and inputs moved there,
and both with Inductor's `deterministic=True`: on the GPU Inductor otherwise benchmarks reduction configs
at compile time and keeps the fastest, so two compiles of one graph can sum in different orders (seen:
attention_core's softmax 6e-8 apart between two compiles on an H200).
"""
import json
import os
import subprocess
import sys
import tempfile

# torch.compile in this process uses the Inductor cache pt2diff's worker uses, one per ATEN_CPU_CAPABILITY
# (pt2diff_worker.cli.inductor_cache_dir): not Inductor's default (/tmp/torchinductor_$USER), which is not
# keyed by the capability, so a graph compiled there under one capability is reused under another (seen:
# under "default" after a native avx2 run, the cached kernels used at::vec, which the default build does
# not declare: a C++ compile error). Sharing the worker's cache shares the kernels' C++ builds (keyed on
# their source) instead of compiling each kernel twice; a compiled graph is reused only where its FX graph,
# inputs and config hash alike, which is what the bit-identity below is about.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from pt2diff_worker.cli import DEFAULT_CACHE_DIR, inductor_cache_dir, keep_precompiled_headers_in_cache  # noqa: E402

sys.path.pop(0)
_WORKER_ENV = dict(os.environ)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(os.environ.get("PT2DIFF_INDUCTOR_CACHE") or os.path.expanduser(DEFAULT_CACHE_DIR),
                                                          os.environ.get("ATEN_CPU_CAPABILITY", ""))

import torch  # noqa: E402

keep_precompiled_headers_in_cache()  # and its precompiled headers too


def user_call(inputs, ep):
    if isinstance(inputs, dict):  # by name: keyword where the program was exported with keywords
        _, example_kwargs = ep.example_inputs
        return (tuple(v for k, v in inputs.items() if k not in example_kwargs),
                {k: v for k, v in inputs.items() if k in example_kwargs})
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2 and isinstance(inputs[0], (tuple, list)) \
            and isinstance(inputs[1], dict):
        return tuple(inputs[0]), inputs[1]
    return tuple(inputs), {}


def on_device(module, device):
    """The module on `device`, with the device arguments its export baked in (factories, casts,
    `_assert_tensor_metadata(device=cpu)`) following it: what the worker does to compile for `device`."""
    target = torch.device(device)
    if target.type == "cuda" and target.index is None:  # asserts compare devices exactly: cuda is cuda:N
        target = torch.device("cuda", torch.cuda.current_device())
    module = module.to(target)
    move = lambda v: target if isinstance(v, torch.device) else v  # noqa: E731
    for gm in module.modules():
        if isinstance(gm, torch.fx.GraphModule):
            for n in gm.graph.nodes:
                n.args = torch.fx.node.map_aggregate(n.args, move)
                n.kwargs = torch.fx.node.map_aggregate(n.kwargs, move)
            gm.recompile()
    return module


def main():
    pt2diff, fixtures, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    device = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            base = name[:-5] if name.endswith("_core") else name
            graph = os.path.join(fixtures, name + ".pt2")
            inputs_file = os.path.join(fixtures, base + "_inputs.pt")
            saved, report = os.path.join(tmp, name + "_outputs.pt"), os.path.join(tmp, name + ".json")
            deterministic = ["--inductor-config", "deterministic=True"] if device != "cpu" else []
            run = subprocess.run([pt2diff, graph, inputs_file, "--save-outputs", saved, "--json", report, "--device", device,
                                  *deterministic], capture_output=True, text=True, env=_WORKER_ENV)
            if run.returncode not in (0, 1):
                print(f"{name}: pt2diff exited {run.returncode}: {run.stderr.strip()}")
                failures += 1
                continue
            # Clean Inductor stands out at no node (docs/verdicts.md, "Node evidence"): the exploded compile ran,
            # and no node's compiled local error reaches --node-ratio times eager's.
            nv = json.load(open(report))["node_verdict"]
            clean = nv["available"] and nv["level"] == "pass" and not nv["findings"]
            print(f"{name}: node verdict {nv['level']} over {nv['judged']} values, worst {nv['worst_node']} at {nv['worst_ratio']:.3g}x "
                  f"eager's local error{'' if clean else ': WRONG (' + (nv.get('unavailable') or str(nv['findings'])[:300]) + ')'}")
            failures += not clean
            compiled, _, _ = torch.load(saved, weights_only=True)
            ep = torch.export.load(graph)
            args, kwargs = user_call(torch.load(inputs_file, weights_only=True), ep)
            module = ep.module()
            if device != "cpu":
                module = on_device(module, device)
                args, kwargs = torch.utils._pytree.tree_map(
                    lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, (args, kwargs))
            torch._dynamo.reset()
            with torch.no_grad(), torch._inductor.config.patch(deterministic=device != "cpu"):
                expected = torch.compile(module)(*args, **kwargs)
            expected = [t.cpu() for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
            # pt2diff reports user outputs first, in signature order: the leaves of the user's output.
            if len(compiled) < len(expected):
                print(f"{name}: pt2diff saved {len(compiled)} outputs, torch.compile returned {len(expected)}")
                failures += 1
                continue
            for i, (got, want) in enumerate(zip(compiled, expected)):
                same = got is not None and got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
                if not same:
                    diff = (got.double() - want.double()).abs().max().item() if got is not None and got.shape == want.shape else "-"
                    print(f"{name}: output {i} differs from torch.compile (max |diff| {diff})")
                    failures += 1
                else:
                    print(f"{name}: output {i} {tuple(want.shape)} {want.dtype}: bit-identical to torch.compile")
    print("FAILED" if failures else "all outputs bit-identical")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
