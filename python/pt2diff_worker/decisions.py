"""Inductor's own decisions, recorded and turned off one by one: what pt2diff's compiler search asks of a compile.

When only the whole graph compiled together diverges, the culprit is not an op of the graph but a decision Inductor
took while compiling it: a pass applied to the graph, a node lowered to Inductor's IR, two nodes fused into one
kernel. PyTorch's CompilerBisector (torch/_inductor/compiler_bisector.py) asks every such site
`CompilerBisector.disable_subsystem(backend, subsystem, debug_info)` before it acts; this module answers that
question for one compile: it records every decision of every subsystem in order, and says "disabled" to the ones the
engine asked to turn off. Fusions are not a bisector subsystem in torch 2.11-2.14: they are counted here where the
scheduler commits to one (Scheduler.speedup_by_fusion, reached once a fusion is legal and makes no cycle).

    with limited({"subsystem": "post_grad_passes", "limit": 3, "skip": []}, names) as seen:
        compiled(*example)          # the compile
    seen  # [{"subsystem", "index", "what", "nodes"}, ...]: every decision, in order, those turned off included

Subsystems: pre_grad_passes, joint_graph_passes, post_grad_passes (each an application of a pass: its name),
lowerings (a node lowered rather than left to its ATen kernel), fusions (two scheduler nodes fused).
"""
import contextlib

from . import kernel_map

#: The subsystems the engine searches, in the order it tries them (docs/compiler-search.md).
SUBSYSTEMS = ("post_grad_passes", "fusions", "lowerings", "joint_graph_passes", "pre_grad_passes")


def _exported(fx_nodes):
    """The exported nodes (kernel_map.tag) of post-grad fx nodes, sorted."""
    return sorted({t for t in (kernel_map.tag(n) for n in fx_nodes) if t is not None})


def _scheduler_nodes(snode):
    """The exported nodes a scheduler node (fused or not) computes."""
    origins = []
    for n in snode.get_nodes():
        origins.extend(getattr(getattr(n, "node", None), "origins", ()) or ())
    return _exported(origins)


@contextlib.contextmanager
def limited(request, backward=None):
    """Records every decision of the compile inside the block; turns off those `request` names: of
    `request["subsystem"]`, each from index `request["limit"]` on (-1: none), each index in `request["skip"]` and each
    decision whose `what` is in `request["skip_what"]`. `backward` (kernel_map.BackwardNames, a training step's):
    the backward graph's nodes are named by the archive's backward nodes, as the kernel map names them. Yields the
    list the decisions are appended to."""
    from torch._inductor.compiler_bisector import CompilerBisector
    from torch._inductor.scheduler import FusionResult, Scheduler
    from torch._inductor.virtualized import V

    target = request.get("subsystem") or ""
    limit = int(request.get("limit", -1))
    skip = {int(i) for i in request.get("skip", [])}
    # A decision turned off by what it is, wherever it comes: the scheduler asks again, in a later round, about a
    # fusion it was refused, under another index.
    skip_what = set(request.get("skip_what", []))
    seen = []
    counts = {}

    def decide(subsystem, what, nodes):
        index = counts.get(subsystem, 0)
        counts[subsystem] = index + 1
        seen.append({"subsystem": subsystem, "index": index, "what": what, "nodes": nodes})
        return subsystem == target and ((0 <= limit <= index) or index in skip or what in skip_what)

    original_disable = CompilerBisector.__dict__["disable_subsystem"]
    original_speedup = Scheduler.speedup_by_fusion

    def disable_subsystem(cls, backend, subsystem, debug_info=None):
        if backend != "inductor" or subsystem not in SUBSYSTEMS:
            return False
        if subsystem == "lowerings":
            node = getattr(V.graph, "current_node", None)
            nodes = _exported([node]) if node is not None else []
            return decide(subsystem, f"lowering of {kernel_map.op_name(node) if node is not None else '?'}", nodes)
        what = debug_info() if debug_info is not None else subsystem
        return decide(subsystem, f"pass {what}", [])

    def speedup_by_fusion(self, node1, node2):
        first, second = _scheduler_nodes(node1), _scheduler_nodes(node2)
        joined = first + [n for n in second if n not in first]
        if decide("fusions", f"fusion of [{', '.join(first)}] with [{', '.join(second)}]", joined):
            return FusionResult.fuse(False)
        return original_speedup(self, node1, node2)

    CompilerBisector.disable_subsystem = classmethod(disable_subsystem)
    Scheduler.speedup_by_fusion = speedup_by_fusion
    try:
        if backward is not None:
            from torch._inductor import config as inductor_config
            with inductor_config.patch({"joint_custom_post_pass": kernel_map.joint_class()(backward, inductor_config.joint_custom_post_pass)}):
                yield seen
        else:
            yield seen
    finally:
        CompilerBisector.disable_subsystem = original_disable
        Scheduler.speedup_by_fusion = original_speedup
