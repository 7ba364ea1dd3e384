#!/usr/bin/env python3
"""The capture backend writes one archive + inputs per Dynamo graph, pt2diff runs each of them, and the
captured inputs reproduce what each graph computed in the program (run by ctest).

    capture_backend.py PT2DIFF

A model with two graph breaks (a print() and torch._dynamo.graph_break()) gives three graphs. Checked:
the program's results are eager's bit for bit (buffers included); index.json lists the three graphs in
order with their source lines, inputs and op counts; `pt2diff --compiled eager` loads and runs every
archive (exit 0, AGREE) and its eager outputs equal, bit for bit, what the graph returned in the
program; a graph whose export fails is recorded and the program goes on; a new capture replaces the
old one, append=True continues its numbering; inner="aot_eager" still captures; training=True captures a
step's forward and backward graphs, linked, and the backward graph gives the step's gradients.
"""
import copy
import inspect
import json
import os
import sys
import tempfile
from unittest import mock

from support import Checks, last_line, pt2diff_eager

import pt2diff_capture
import torch
import torch.nn as nn


class TwoBreaks(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = torch.relu(self.bn(self.fc1(x)))  # graph 0: training-mode batch norm updates its buffers
        print("graph break 1")
        h = h.to(torch.bfloat16) * 2  # graph 1
        torch._dynamo.graph_break()
        return self.fc2(h.float()).softmax(-1)  # graph 2


class OneGraph(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 3


def recording(backend, outputs):
    """Wraps a backend: the outputs of each graph's first call, in the order the graphs were compiled."""
    def compile_graph(gm, example_inputs):
        run = backend(gm, example_inputs)
        slot = len(outputs)
        outputs.append(None)

        def call(*args):
            out = run(*args)
            if outputs[slot] is None:
                outputs[slot] = [t.detach().clone() for t in out if isinstance(t, torch.Tensor)]
            return out
        return call
    return compile_graph


def source_line(text):
    lines, first = inspect.getsourcelines(TwoBreaks.forward)
    return next(first + i for i, line in enumerate(lines) if text in line)


def read_index(out):
    with open(os.path.join(out, "index.json")) as f:
        return json.load(f)["graphs"]


def main():
    pt2diff = sys.argv[1]
    c = Checks("capture backend")
    torch.manual_seed(0)
    model = TwoBreaks().train()
    x = torch.randn(4, 16)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "captured")
        eager_model = copy.deepcopy(model)
        expected = eager_model(x)
        recorded = []
        torch._dynamo.reset()
        got = torch.compile(model, backend=recording(pt2diff_capture.capture_backend(out), recorded))(x)
        c.check(torch.equal(got, expected), "the program's output under capture is eager's, bit for bit")
        c.check(torch.equal(model.bn.running_mean, eager_model.bn.running_mean)
                and int(model.bn.num_batches_tracked) == 1, "batch-norm buffers were updated once, as in eager")

        graphs = read_index(out)
        c.check([g["id"] for g in graphs] == [0, 1, 2] and all(g["status"] == "ok" for g in graphs),
                f"index.json: graphs 0, 1, 2, all exported ({[(g['id'], g['status'], g['error']) for g in graphs]})")
        me = os.path.basename(__file__)
        wants = [(source_line("def forward"), "forward", "h = torch.relu"), (source_line('print("graph break 1")'), "forward", "h = h.to"),
                 (source_line("torch._dynamo.graph_break()"), "forward", "return self.fc2")]
        for g, (line, fn, op) in zip(graphs, wants):
            name = f"graph_{g['id']:03d}"
            c.check(g["source"]["file"] == os.path.abspath(__file__) and g["source"]["function"] == fn
                    and g["where"].startswith(f"{me}:{line} in {fn}"), f"{name} where: {g['where']}")
            c.check(g["first_op"].startswith(f"{me}:{source_line(op)} in forward: {op}"), f"{name} first op: {g['first_op']}")
            c.check(os.path.isfile(os.path.join(out, g["archive"])) and os.path.isfile(os.path.join(out, g["inputs"])),
                    f"{name}: {g['archive']} and {g['inputs']} exist")
        c.check({"name": "x", "dtype": "float32", "shape": [4, 16]} in graphs[0]["args"]
                and {"name": "self_fc1_weight", "dtype": "float32", "shape": [32, 16]} in graphs[0]["args"],
                "graph_000 inputs are named like the code (x, self_fc1_weight) with dtype and shape")
        c.check(graphs[1]["args"] == [{"name": "h", "dtype": "float32", "shape": [4, 32]}],
                f"graph_001 takes h (float32[4, 32]): {graphs[1]['args']}")

        for g, outputs in zip(graphs, recorded):
            name = f"graph_{g['id']:03d}"
            run, eager = pt2diff_eager(pt2diff, os.path.join(out, g["archive"]), os.path.join(out, g["inputs"]),
                                       os.path.join(tmp, name + "_outputs.pt"))
            c.check(run.returncode == 0 and last_line(run.stdout).startswith(f"AGREE ({g['ops']} nodes"),
                    f"pt2diff {name} --compiled eager: exit {run.returncode}, {last_line(run.stdout or run.stderr)}")
            c.check(f"{me}:{source_line(wants[g['id']][2])} in " in run.stdout,
                    f"{name}: pt2diff cites the program's source lines (Dynamo's stack traces are kept)")
            same = eager is not None and len(eager) == len(outputs) and all(
                a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(eager, outputs))
            c.check(same, f"{name}: pt2diff's eager outputs on the captured inputs equal the program's, bit for bit")

        # A graph that cannot be exported: recorded in the index, the program goes on.
        failing = os.path.join(tmp, "failing")
        real_export = torch.export.export
        calls = []

        def export_failing_second(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("planted export failure")
            return real_export(*args, **kwargs)
        torch._dynamo.reset()
        model2, eager2 = copy.deepcopy(eager_model), copy.deepcopy(eager_model)
        with mock.patch.object(torch.export, "export", export_failing_second):
            got = torch.compile(model2, backend=pt2diff_capture.capture_backend(failing, quiet=True))(x)
        c.check(torch.equal(got, eager2(x)), "a failing export leaves the program's results alone")
        graphs = read_index(failing)
        c.check([g["status"] for g in graphs] == ["ok", "export_failed", "ok"]
                and graphs[1]["error"] == "torch.export failed: RuntimeError: planted export failure"
                and os.path.isfile(os.path.join(failing, "graph_001_inputs.pt"))
                and not os.path.exists(os.path.join(failing, "graph_001.pt2")),
                f"index.json records the failure, inputs kept: {[(g['status'], g['error']) for g in graphs]}")

        # An output directory that cannot be made: a warning, and the program runs.
        not_a_dir = os.path.join(tmp, "a_file")
        open(not_a_dir, "w").close()
        torch._dynamo.reset()
        got = torch.compile(OneGraph(), backend=pt2diff_capture.capture_backend(not_a_dir))(x)
        c.check(torch.equal(got, OneGraph()(x)), "an output directory that cannot be made leaves the program alone")

        # A new capture into the same directory replaces the old one; append=True continues it.
        torch._dynamo.reset()
        torch.compile(OneGraph(), backend=pt2diff_capture.capture_backend(out, quiet=True))(x)
        graphs = read_index(out)
        c.check([g["id"] for g in graphs] == [0] and sorted(os.listdir(out)) == ["graph_000.pt2", "graph_000_inputs.pt", "index.json"],
                f"a new capture replaces the old one: {sorted(os.listdir(out))}")
        torch._dynamo.reset()
        torch.compile(OneGraph(), backend=pt2diff_capture.capture_backend(out, append=True, quiet=True))(x)
        graphs = read_index(out)
        c.check([(g["id"], g["archive"]) for g in graphs] == [(0, "graph_000.pt2"), (1, "graph_001.pt2")]
                and os.path.isfile(os.path.join(out, "graph_001.pt2")), "append=True numbers the new graph 1")

        # Capture while another backend compiles: the program runs compiled, the archives are the same graphs.
        chained = os.path.join(tmp, "chained")
        torch._dynamo.reset()
        got = torch.compile(copy.deepcopy(eager_model).eval(), backend=pt2diff_capture.capture_backend(chained, inner="aot_eager", quiet=True))(x)
        graphs = read_index(chained)
        c.check(len(graphs) == 3 and all(g["status"] == "ok" for g in graphs)
                and torch.allclose(got, copy.deepcopy(eager_model).eval()(x)), "inner='aot_eager': three graphs captured, results right")
        traces = [n.meta.get("stack_trace") or "" for n in torch.export.load(os.path.join(chained, "graph_000.pt2")).graph.nodes
                  if n.op == "call_function"]
        c.check(graphs[0]["args"][0]["name"] == "self_fc1_weight" and all(os.path.abspath(__file__) in t for t in traces),
                "inner='aot_eager': inputs named like the code, every op's stack trace in this file")

        # training=True: a step trained under torch.compile gives AOTAutograd's forward and backward graphs, linked;
        # the gradients are eager's, and pt2diff's eager run of the backward graph on its captured
        # inputs (the saved activations and the tangent) gives the gradients the step produced.
        trained = os.path.join(tmp, "trained")
        torch._dynamo.reset()
        torch.manual_seed(0)
        step_model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4))
        reference = copy.deepcopy(step_model)
        xs, ys = torch.randn(6, 8), torch.randn(6, 4)
        compiled = torch.compile(step_model, backend=pt2diff_capture.capture_backend(trained, training=True, quiet=True))
        torch.nn.functional.mse_loss(compiled(xs), ys).backward()
        torch.nn.functional.mse_loss(reference(xs), ys).backward()
        grads = [p.grad for p in step_model.parameters()]
        # Not bit for bit: AOTAutograd's graphs are after Inductor's decompositions (layer norm's backward as its
        # primitives), which round differently from the ATen kernels eager runs; float32, a few ulp.
        c.check(all(torch.allclose(a, p.grad, rtol=1e-5, atol=1e-7) for a, p in zip(grads, reference.parameters())),
                "training=True: the step's gradients are eager's to 1e-5")
        graphs = read_index(trained)
        kinds = [(g["kind"], g["status"], g.get("forward")) for g in graphs]
        backward = graphs[1] if len(graphs) == 2 else {}
        c.check(kinds == [("forward", "ok", None), ("backward", "ok", 0)] and backward.get("tangents") == ["tangents_1"]
                and [s["forward_output"] for s in backward.get("saved", [])] == list(range(1, len(graphs[0]["outputs"]))),
                f"training=True: a forward and a backward graph, linked by the saved activations: {kinds}")
        if backward:
            run, eager = pt2diff_eager(pt2diff, os.path.join(trained, backward["archive"]),
                                       os.path.join(trained, backward["inputs"]), os.path.join(tmp, "backward_out.pt"))
            got = [t for t in (eager or []) if t is not None]
            c.check(run.returncode == 0 and len(got) == len(grads) and all(torch.equal(a, b) for a, b in zip(got, grads)),
                    f"pt2diff runs the backward graph: its outputs are the step's gradients, bit for bit ({last_line(run.stdout)})")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
