#!/usr/bin/env python3
"""The Inductor worker with a compiler bug planted in a lowering, for kernel-map and localization tests:
Inductor's lowering of one ATen op (PT2DIFF_PLANT_OP: "relu", "div.Tensor"; default relu) returns its result scaled by
(1 + PT2DIFF_PLANT_ERROR), default 1e-2, inside the generated kernel; PT2DIFF_PLANT_ERROR=nan makes it
log(-result) instead (NaN and -Inf where eager is finite); PT2DIFF_PLANT_SHAPE limits it to one shape.
The patch is planted_lowering.py (shared with bench/minifier_bench.py). The graph Inductor lowers is the
real one (no FX pass rewrites it), so the bug is in the compiled code only, as a wrong lowering would be.
Everything else is the real worker, with its Inductor cache: the FX graph and AOTAutograd caches are off (the
lowering is not part of their keys), so no graph compiled without the bug is reused, while the kernels'
C++ builds are shared with every other compile (keyed on their source, which holds the bug).

    lowering_bug_worker.py [--cache-dir DIR]
"""
import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import planted_lowering  # noqa: E402

sys.path.pop(0)

planted_lowering.plant()
# No graph compiled without the bug is reused: the FX graph and AOTAutograd caches off, in the config (an
# environment variable set here would be read too late in a worker forked by a worker server: docs/worker-protocol.md).
import torch._functorch.config  # noqa: E402
import torch._inductor.config  # noqa: E402

torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
