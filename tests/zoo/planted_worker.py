#!/usr/bin/env python3
"""The Inductor worker with a planted compiler bug, for the zoo's localization tests: a post-grad pass
that computes one kind of op in lower precision and casts the result back, as a lowering that silently
drops precision would. PT2DIFF_PLANT chooses which:

  matmul       float32 mm / addmm / bmm computed from inputs rounded to float8_e4m3fn
  matmul_bf16  bfloat16 mm / addmm / bmm (an autocast model's) computed from inputs rounded to float8_e4m3fn
  conv         float32 convolutions computed from inputs rounded to float8_e4m3fn
  conv_bf16    bfloat16 convolutions computed from inputs rounded to float8_e4m3fn

(bfloat16 rounding, tests/engine/localize/lowp_matmul_worker.py's bug, stays under the same() rule's
tolerance on these layer-normed models: an error of a few 1e-3 relative, which the rule accepts.)

  scale        a small wrong factor: the results of one kind of op (PT2DIFF_PLANT_OPS: matmul or conv) of one
               dtype (PT2DIFF_PLANT_DTYPE, default bfloat16) are multiplied by 1 + PT2DIFF_PLANT_ERROR (default
               0.05), only where the op's first input (an addmm's matrix, not its bias) has the shape PT2DIFF_PLANT_INPUT_SHAPE ("16,128") when
               that is set: one lowering, wrong at one shape, used in every layer. The outputs absorb it
               (residual streams, norms); the node verdict must not (docs/verdicts.md, "Node evidence").

Everything else is the real worker, with its Inductor cache: the FX graph and AOTAutograd caches are off, so
no graph compiled without the bug is reused, while the kernels' C++ builds are shared with every other
compile (they are keyed on their source, which holds the bug where there is one).

    PT2DIFF_PLANT=conv planted_worker.py [--cache-dir DIR]
"""
import os
import runpy
import sys

PLANT = os.environ.get("PT2DIFF_PLANT", "matmul")
SCALE_KEY = "-".join(os.environ.get(k, "") for k in ("PT2DIFF_PLANT_OPS", "PT2DIFF_PLANT_DTYPE", "PT2DIFF_PLANT_ERROR",
                                                     "PT2DIFF_PLANT_INPUT_SHAPE")).replace(",", "x") if PLANT == "scale" else ""
import torch  # noqa: E402
import torch._functorch.config  # noqa: E402
from torch._inductor import config  # noqa: E402

# No graph compiled without the bug is reused: the FX graph and AOTAutograd caches off, in the config (an
# environment variable set here would be read too late in a worker forked by a worker server: docs/worker-protocol.md).
config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: E402

aten, prims = torch.ops.aten, torch.ops.prims
MATMULS = {aten.mm.default, aten.bmm.default, aten.addmm.default}
CONVS = {aten.convolution.default}
#: plant -> (targets, dtype of the ops it breaks, the dtype their tensor inputs are rounded to)
PLANTS = {
    "matmul": (MATMULS, torch.float32, torch.float8_e4m3fn),
    "matmul_bf16": (MATMULS, torch.bfloat16, torch.float8_e4m3fn),
    "conv": (CONVS, torch.float32, torch.float8_e4m3fn),
    "conv_bf16": (CONVS, torch.bfloat16, torch.float8_e4m3fn),
}


class LowerPrecision(CustomGraphPass):
    def __init__(self, targets, dtype, low):
        self.targets, self.dtype, self.low = targets, dtype, low

    def round_trip(self, graph, a, dtype):
        low = graph.call_function(prims.convert_element_type.default, (a, self.low))
        low.meta["val"] = a.meta["val"].to(self.low)
        back = graph.call_function(prims.convert_element_type.default, (low, dtype))
        back.meta["val"] = a.meta["val"]
        return back

    def __call__(self, graph):
        for node in list(graph.nodes):
            if node.target not in self.targets or node.meta["val"].dtype != self.dtype:
                continue
            with graph.inserting_before(node):
                # Tensor inputs rounded through the low dtype (float8 has no matmul/conv kernels, so the
                # op still computes in its own dtype: the bug is in its inputs' precision).
                node.args = tuple(self.round_trip(graph, a, a.meta["val"].dtype)
                                  if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)
                                  and a.meta["val"].is_floating_point() else a for a in node.args)

    def uuid(self):
        return f"pt2diff-test-planted-{PLANT}-2"


class Scale(CustomGraphPass):
    """The results of `targets` of `dtype` (where the first input has `shape`, if given) times `factor`."""

    def __init__(self, targets, dtype, factor, shape):
        self.targets, self.dtype, self.factor, self.shape = targets, dtype, factor, shape

    def __call__(self, graph):
        for node in list(graph.nodes):
            val = node.meta.get("val")
            if node.target not in self.targets or not isinstance(val, torch.Tensor) or val.dtype != self.dtype:
                continue
            # An addmm's first input is its bias: the matrix is the second (as tests/zoo/test_zoo.py keys it).
            a = node.args[1] if node.target is aten.addmm.default else node.args[0]
            first = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            if self.shape is not None and (first is None or tuple(first.shape) != self.shape):
                continue
            with graph.inserting_after(node):
                scaled = graph.call_function(aten.mul.Tensor, (node, self.factor))
                scaled.meta["val"] = val
            node.replace_all_uses_with(scaled, delete_user_cb=lambda user: user is not scaled)

    def uuid(self):
        return f"pt2diff-test-planted-scale-{SCALE_KEY}-1"


if PLANT == "scale":
    shape_text = os.environ.get("PT2DIFF_PLANT_INPUT_SHAPE", "").strip()
    config.post_grad_custom_post_pass = Scale(
        MATMULS if os.environ.get("PT2DIFF_PLANT_OPS", "matmul") == "matmul" else CONVS,
        getattr(torch, os.environ.get("PT2DIFF_PLANT_DTYPE", "bfloat16")), 1.0 + float(os.environ.get("PT2DIFF_PLANT_ERROR", "0.05")),
        tuple(int(s) for s in shape_text.split(",")) if shape_text else None)
else:
    targets, dtype, low = PLANTS[PLANT]
    config.post_grad_custom_post_pass = LowerPrecision(targets, dtype, low)
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
