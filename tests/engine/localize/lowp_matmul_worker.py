#!/usr/bin/env python3
"""The Inductor worker with a planted compiler bug, for localization tests: a post-grad pass that
computes float32 matrix products (mm, addmm, bmm) in bfloat16 and casts the result back, as a lowering
that silently drops precision would. Everything else is the real worker, with its Inductor
cache: the FX graph and AOTAutograd caches are off, so no graph compiled without the bug is reused, while
the kernels' C++ builds (keyed on their source) are shared with every other compile.

    lowp_matmul_worker.py [--cache-dir DIR]
"""
import os
import runpy
import sys

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


class LowPrecisionMatmul(CustomGraphPass):
    def __call__(self, graph):
        for node in list(graph.nodes):
            if node.target not in MATMULS or node.meta["val"].dtype != torch.float32:
                continue
            with graph.inserting_before(node):
                args = []
                for a in node.args:
                    low = graph.call_function(prims.convert_element_type.default, (a, torch.bfloat16))
                    low.meta["val"] = a.meta["val"].to(torch.bfloat16)
                    args.append(low)
            node.args = tuple(args)
            result = node.meta["val"]
            node.meta["val"] = result.to(torch.bfloat16)
            with graph.inserting_after(node):
                back = graph.call_function(prims.convert_element_type.default, (node, torch.float32))
                back.meta["val"] = result
            node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)

    def uuid(self):
        return "pt2diff-test-lowp-matmul-1"


config.post_grad_custom_post_pass = LowPrecisionMatmul()
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
