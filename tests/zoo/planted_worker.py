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

Everything else is the real worker. It keeps its own Inductor cache, FX graph cache off, so that no
kernel compiled without the bug is reused.

    PT2DIFF_PLANT=conv planted_worker.py [--cache-dir DIR]
"""
import os
import runpy
import sys

PLANT = os.environ.get("PT2DIFF_PLANT", "matmul")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.expanduser(f"~/.cache/pt2diff/inductor-planted-{PLANT}")
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
import torch  # noqa: E402
from torch._inductor import config  # noqa: E402
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


targets, dtype, low = PLANTS[PLANT]
config.post_grad_custom_post_pass = LowerPrecision(targets, dtype, low)
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
