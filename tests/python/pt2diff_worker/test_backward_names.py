"""A training step's joint graph named by the archive's nodes (kernel_map.BackwardNames, the kernel table of a whole
step): backward nodes renamed by the archive's backward node of the same forward node and op, a linear's two mm told
apart by shape, an unmatched backward node left unnamed, and each archive node's value marked on the whole joint
graph. No compile: hand-made FX graphs with the metadata AOTAutograd and pt2diff_capture give."""
import os
import sys
import types
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from pt2diff_worker import kernel_map  # noqa: E402

aten = torch.ops.aten


def node(g, name, target, shape, custom=None, original=None, backward=False, args=()):
    n = g.create_node("call_function", target, args, name=name)
    n.meta["val"] = torch.empty(shape)
    if custom is not None:
        n.meta["custom"] = dict(custom)
    if original is not None:
        n.meta["original_aten"] = original
    if backward:
        n.meta["partitioner_tag"] = "is_backward"
    return n


def archive():
    """The archive's step: addmm (a linear), relu; relu's backward, the linear's two mm (input and weight gradients)."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    addmm = node(g, "addmm", aten.addmm.default, (6, 16), args=(x,))
    relu = node(g, "relu", aten.relu.default, (6, 16), args=(addmm,))
    tb = node(g, "threshold_backward", aten.threshold_backward.default, (6, 16), {"backward_of": "relu"}, args=(relu,))
    node(g, "mm", aten.mm.default, (6, 8), {"backward_of": "addmm"}, args=(tb,))
    node(g, "mm_1", aten.mm.default, (16, 8), {"backward_of": "addmm"}, args=(tb,))
    return types.SimpleNamespace(graph=g)


def joint():
    """AOTAutograd's joint graph of it: every backward node carries its forward node's tag; relu is decomposed into
    two steps (step, relu) and so is its backward (le, where); one backward node matches no archive node."""
    g = torch.fx.Graph()
    x = g.placeholder("primals_1")
    tag = kernel_map.TAG
    addmm = node(g, "addmm", aten.addmm.default, (6, 16), {tag: "addmm"}, aten.addmm.default, args=(x,))
    step = node(g, "step", aten.clone.default, (6, 16), {tag: "relu"}, aten.relu.default, args=(addmm,))
    relu = node(g, "relu", aten.relu.default, (6, 16), {tag: "relu"}, aten.relu.default, args=(step,))
    le = node(g, "le", aten.le.Scalar, (6, 16), {tag: "relu"}, aten.threshold_backward.default, True, args=(relu,))
    where = node(g, "where", aten.where.self, (6, 16), {tag: "relu"}, aten.threshold_backward.default, True, args=(le,))
    node(g, "mm_5", aten.mm.default, (16, 8), {tag: "addmm"}, aten.mm.default, True, args=(where,))
    node(g, "mm_4", aten.mm.default, (6, 8), {tag: "addmm"}, aten.mm.default, True, args=(where,))
    node(g, "sum_1", aten.sum.dim_IntList, (1, 16), {tag: "addmm"}, aten.sum.dim_IntList, True, args=(where,))
    return g


class BackwardNames(unittest.TestCase):
    def setUp(self):
        self.names = kernel_map.BackwardNames(archive())
        self.graph = joint()
        self.names(self.graph)
        self.by = {n.name: n for n in self.graph.nodes}

    def test_backward_nodes_take_the_archive_names_and_forward_nodes_keep_theirs(self):
        tags = {n: kernel_map.tag(self.by[n]) for n in ("addmm", "step", "relu", "le", "where", "mm_4", "mm_5", "sum_1")}
        self.assertEqual(tags, {"addmm": "addmm", "step": "relu", "relu": "relu", "le": "threshold_backward",
                                "where": "threshold_backward", "mm_4": "mm", "mm_5": "mm_1", "sum_1": None})

    def test_the_value_of_each_archive_node_is_marked_on_the_joint_graph(self):
        values = {n: kernel_map.stands_for(self.by[n]) for n in ("addmm", "step", "relu", "le", "where", "mm_4", "mm_5")}
        self.assertEqual(values, {"addmm": "addmm", "step": None, "relu": "relu", "le": None,
                                  "where": "threshold_backward", "mm_4": "mm", "mm_5": "mm_1"})
        # The marks outlive the partition: a forward graph that saves relu's first step for the backward (and leaves
        # relu itself to it) has that step with no user of its own, yet it is not relu's value.
        forward = torch.fx.Graph()
        copies = {}
        for n in self.graph.nodes:
            if n.name in ("primals_1", "addmm", "step"):
                copies[n] = forward.node_copy(n, lambda a: copies[a])
        self.assertEqual([kernel_map.stands_for(c) for c in copies.values() if c.op == "call_function"], ["addmm", None])

    def test_the_key_changes_with_the_archive_backward_nodes(self):
        other = archive()
        next(n for n in other.graph.nodes if n.name == "mm_1").meta["custom"] = {"backward_of": "relu"}
        self.assertNotEqual(kernel_map.BackwardNames(other).key, self.names.key)


if __name__ == "__main__":
    unittest.main()
