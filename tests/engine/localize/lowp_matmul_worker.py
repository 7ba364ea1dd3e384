#!/usr/bin/env python3
"""The Inductor worker with a planted compiler bug, for localization tests: a post-grad pass that
computes matrix products (mm, addmm, bmm) from bfloat16 inputs, as a lowering that silently drops
precision would. Everything else is the real worker.

    lowp_matmul_worker.py [--cache-dir DIR]
"""
import os
import runpy
import sys

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.expanduser("~/.cache/pt2diff/inductor"))
import torch  # noqa: E402
from torch._inductor import config  # noqa: E402
from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: E402

aten, prims = torch.ops.aten, torch.ops.prims
MATMULS = {aten.mm.default: (0, 1), aten.bmm.default: (0, 1), aten.addmm.default: (1, 2)}


class LowPrecisionMatmul(CustomGraphPass):
    def __call__(self, graph):
        for node in list(graph.nodes):
            operands = MATMULS.get(node.target)
            if operands is None or node.meta["val"].dtype != torch.float32:
                continue
            args = list(node.args)
            with graph.inserting_before(node):
                for i in operands:
                    low = graph.call_function(prims.convert_element_type.default, (args[i], torch.bfloat16))
                    low.meta["val"] = args[i].meta["val"].to(torch.bfloat16)
                    high = graph.call_function(prims.convert_element_type.default, (low, torch.float32))
                    high.meta["val"] = args[i].meta["val"]
                    args[i] = high
            node.args = tuple(args)

    def uuid(self):
        return "pt2diff-test-lowp-matmul-1"


config.post_grad_custom_post_pass = LowPrecisionMatmul()
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
