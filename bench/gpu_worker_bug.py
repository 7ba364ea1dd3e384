#!/usr/bin/env python3
"""The Inductor worker with a planted bug for bench/gpu_bench.py: a post-grad pass that computes float32
matrix products (mm, addmm, bmm) in bfloat16, and rounds the operands of bfloat16 ones through
float8_e4m3fn, as a lowering that silently drops precision would. Caches off (a cached kernel compiled
without the bug would hide it). Everything else is the real worker.
"""
import os
import runpy
import sys

os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
import torch  # noqa: E402
from torch._inductor import config  # noqa: E402
from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: E402

aten, prims = torch.ops.aten, torch.ops.prims
MATMULS = {aten.mm.default, aten.bmm.default, aten.addmm.default}


def cast(graph, node, dtype):
    out = graph.call_function(prims.convert_element_type.default, (node, dtype))
    out.meta["val"] = node.meta["val"].to(dtype)
    return out


class LowPrecisionMatmul(CustomGraphPass):
    def __call__(self, graph):
        for node in list(graph.nodes):
            if node.target not in MATMULS:
                continue
            dtype = node.meta["val"].dtype
            if dtype == torch.float32:
                with graph.inserting_before(node):
                    node.args = tuple(cast(graph, a, torch.bfloat16) for a in node.args)
                result = node.meta["val"]
                node.meta["val"] = result.to(torch.bfloat16)
                with graph.inserting_after(node):
                    back = cast(graph, node, torch.float32)
                back.meta["val"] = result
                node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
            elif dtype == torch.bfloat16:
                with graph.inserting_before(node):
                    node.args = tuple(cast(graph, cast(graph, a, torch.float8_e4m3fn), torch.bfloat16)
                                      if isinstance(a, torch.fx.Node) else a for a in node.args)

    def uuid(self):
        return "pt2diff-bench-lowp-matmul-1"


config.post_grad_custom_post_pass = LowPrecisionMatmul()
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
