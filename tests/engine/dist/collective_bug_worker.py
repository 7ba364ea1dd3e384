#!/usr/bin/env python3
"""The Inductor worker with a bug planted in Inductor's lowering of `_c10d_functional.all_reduce`, for pt2diff dist's
tests (tests/python/pt2diff_capture/test_capture_ranks.py, docs/distributed.md). PT2DIFF_PLANT_COLLECTIVE says which:

- "scale": the reduced result multiplied by 2 once more (a double scaling, as a gradient divided twice or a Partial
  placement reduced twice);
- "precision": the input cast to float16, reduced in float16, cast back (a collective in reduced precision);
- "read_before_wait": the all_reduce is issued, but the value the graph goes on with is the rank's own input, as read
  before the reduction lands;
- "offset": every waited result rolled by one rank's chunk along dim 0 (an all_gather whose chunks land one rank off,
  as a wrong bucket offset puts them); PT2DIFF_PLANT_WORLD (default 2) gives the chunk count;
- "bucket_offset": Inductor's all_gather bucketing (`bucket_all_gathers_fx`, a communication pass) splits the bucket
  at the wrong offsets: each gathered tensor of a bucket of equal-sized ones gets its neighbour's part. Only with the
  pass on (`--inductor-config bucket_all_gathers_fx="'all'"`).

PT2DIFF_PLANT_RANK=R plants the wait's bugs (scale, precision, offset) on rank R of the process group only (a rank whose
compiler differs: another build, another device); a worker without a process group then has none.

The graph Inductor lowers is the real one; the bug is in the compiled code only. Every rank's worker runs the same bug,
as every rank of a job runs the same compiler. Everything else is the real worker (engine/backends/inductor_worker.py);
the FX graph and AOTAutograd caches are off, so no graph compiled without the bug is reused.
"""
import operator
import os
import runpy
import sys

import torch
import torch._functorch.config
import torch._inductor.config
from torch._inductor import lowering as L

torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
torch._inductor.config.emulate_precision_casts = True  # keeps the planted float16 rounding (Inductor elides a cast pair)

KIND = os.environ.get("PT2DIFF_PLANT_COLLECTIVE", "scale")
c10d = torch.ops._c10d_functional
aten = torch.ops.aten
# Inductor's post-grad passes make the graph's all_reduce the in-place all_reduce_ before lowering: both are planted.
# A value computed from the collective's buffer must come after its wait (a pointwise lowered on it before the wait
# reads the buffer before the reduction lands): the scaling and the rounding of the result are planted in the wait.
_right = {k: L.lowerings[k] for k in (c10d.all_reduce.default, c10d.all_reduce_.default, c10d.wait_tensor.default)}


def _half(x):
    """x rounded to float16 and back to its dtype."""
    return L.to_dtype(L.to_dtype(x, torch.float16), x.get_dtype())


def _all_reduce(key):
    def wrong(inp, reduce_op, group_name):
        if KIND == "precision":  # what the collective sends is float16
            if key == c10d.all_reduce_.default:
                L.lowerings[aten.copy_.default](inp, _half(inp))
            else:
                inp = _half(inp)
        if KIND == "read_before_wait":
            own = L.clone(inp)
            own.realize()
            _right[key](inp, reduce_op, group_name)
            return own
        return _right[key](inp, reduce_op, group_name)
    return wrong


def _on_this_rank():
    rank = os.environ.get("PT2DIFF_PLANT_RANK")
    if rank is None:
        return True
    import torch.distributed as dist
    return dist.is_initialized() and dist.get_rank() == int(rank)


def _wait(inp):
    out = _right[c10d.wait_tensor.default](inp)
    if not _on_this_rank():
        return out
    if KIND == "scale":
        return L.lowerings[aten.mul.Tensor](out, 2.0)
    if KIND == "precision":  # ... and what it returns
        return _half(out)
    if KIND == "offset":
        size = int(out.get_size()[0])
        shift = size // int(os.environ.get("PT2DIFF_PLANT_WORLD", "2"))
        tail = L.lowerings[aten.slice.Tensor](out, 0, size - shift, size)
        head = L.lowerings[aten.slice.Tensor](out, 0, 0, size - shift)
        return L.lowerings[aten.cat.default]([tail, head], 0)
    return out


def _wrong_bucket_split(right):
    def bucket(gm, *args, **kwargs):
        right(gm, *args, **kwargs)
        for split in gm.graph.find_nodes(op="call_function", target=aten.split_with_sizes.default):
            parts = [u for u in split.users if u.target is operator.getitem]
            if len(parts) == 2 and len(set(split.args[1])) == 1:  # equal parts: the swap keeps every shape
                a, b = parts
                a.args, b.args = (split, b.args[1]), (split, a.args[1])
        gm.recompile()
    return bucket


if KIND not in ("scale", "precision", "read_before_wait", "offset", "bucket_offset"):
    raise SystemExit(f"PT2DIFF_PLANT_COLLECTIVE={KIND}: scale, precision, read_before_wait, offset or bucket_offset")
if KIND == "bucket_offset":
    from torch._inductor.fx_passes import bucketing
    bucketing.bucket_all_gather = _wrong_bucket_split(bucketing.bucket_all_gather)
for packet, key in ((c10d.all_reduce, c10d.all_reduce.default), (c10d.all_reduce_, c10d.all_reduce_.default)):
    L.lowerings[packet] = L.lowerings[key] = _all_reduce(key)
L.lowerings[c10d.wait_tensor] = L.lowerings[c10d.wait_tensor.default] = _wait

worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "engine", "backends", "inductor_worker.py")
sys.argv = [worker] + sys.argv[1:]
runpy.run_path(worker, run_name="__main__")
