"""A torch.compile backend that writes every graph Dynamo hands it as an archive + inputs for pt2diff.

    torch.compile(model, backend=pt2diff_capture.capture_backend("captured"))

For graph number N (in the order Dynamo compiles them) it writes, at the graph's first call,
captured/graph_00N_inputs.pt (the inputs of that call, before the graph runs) and captured/graph_00N.pt2
(torch.export of Dynamo's graph on those inputs), and keeps captured/index.json up to date. Then the
graph runs: eagerly by default, or compiled by `inner` ("inductor", any backend) so the program behaves
as it did. Capture never breaks the program: a graph that cannot be exported gets its error in the index.
"""
import copy
import json
import keyword
import os
import re
import sys
import threading
import time
import warnings

import torch

from .export import count_ops, export_program, leaf_names, write_archive, write_inputs
from .normalize import describe, one_line

INDEX = "index.json"
FORMAT = "pt2diff-capture index 1"
_OWN_FILE = re.compile(r"graph_\d+(_inputs\.pt|\.pt2)")


def capture_backend(out="captured", *, inner=None, append=False, core_aten=False, quiet=False, training=False):
    """A torch.compile backend that captures into directory `out` (str or path).

    inner: None runs each graph eagerly; a backend name ("inductor") or callable compiles it as usual.
    append: keep the graphs already listed in out/index.json and number new ones after them; by default
    a new capture replaces the previous one (its graph files are removed).
    core_aten: save each program after run_decompositions() (core ATen).
    quiet: no line on stderr per captured graph.
    training: capture what AOTAutograd compiles for a training program instead of Dynamo's graph: each region's
    forward and backward graphs (ATen, after Inductor's decompositions, partitioned as torch.compile partitions
    them), run eagerly, the backward's entry linked to its forward's (docs/training.md). `inner` must be None."""
    if training and inner is not None:
        raise ValueError("capture_backend(training=True) runs AOTAutograd's graphs eagerly: inner must be None")
    return CaptureBackend(out, inner=inner, append=append, core_aten=core_aten, quiet=quiet, training=training)


class CaptureBackend:
    def __init__(self, out, *, inner=None, append=False, core_aten=False, quiet=False, training=False):
        self.out = os.fspath(out)
        self.training = training
        self.inner = torch._dynamo.lookup_backend(inner) if isinstance(inner, str) else inner
        self.append = append
        self.core_aten = core_aten
        self.quiet = quiet
        self.entries = None  # read or reset when the first graph arrives
        self.distributed = None  # the rank's process group facts (distributed_context), read with the first graph
        self._lock = threading.Lock()
        self.__name__ = "pt2diff_capture"  # Dynamo names backends in its logs

    def __call__(self, gm, example_inputs):
        if self.training:
            return self._aot(gm, example_inputs)
        entry = graph = None
        try:  # capture must never break the program
            with self._lock:
                self._start()
                gid = max((e["id"] for e in self.entries), default=-1) + 1
                entry = self._entry(gid, gm)
                self.entries.append(entry)
                self._write_index()
            # Our own copy: the inner compiler may rewrite gm, and the inputs should be named like the code.
            graph = _named_copy(gm, deep=self.inner is not None)
        except Exception as e:  # noqa: BLE001
            if entry is None:
                print(f"pt2diff_capture: not capturing a graph: {one_line(e)}", file=sys.stderr)
            else:
                entry["error"] = f"copying the graph failed: {one_line(e)}"
        run_graph = gm.forward if self.inner is None else self.inner(gm, example_inputs)
        pending = [entry is not None]

        def run(*args):
            if pending[0]:
                pending[0] = False
                self._capture(entry, graph, args)
            return run_graph(*args)

        return run

    def _aot(self, gm, example_inputs):
        """Dynamo's graph through AOTAutograd with Inductor's decompositions and partitioner: its forward and
        backward graphs are captured as graphs of their own (kind "forward" and "backward"), each at its first call,
        and run eagerly."""
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.partitioners import min_cut_rematerialization_partition
        from torch._inductor.decomposition import select_decomp_table

        where = {}
        try:
            where = _source(gm)
        except Exception:  # noqa: BLE001
            pass
        forward_id = []

        def compiler(kind):
            def compile_graph(graph, example):
                entry = None
                try:
                    with self._lock:
                        self._start()
                        gid = max((e["id"] for e in self.entries), default=-1) + 1
                        entry = self._entry(gid, graph)
                        entry.update({k: v for k, v in where.items() if k in ("compile_id", "source", "where")}, kind=kind)
                        if kind == "forward":
                            forward_id.append(gid)
                            entry["outputs"] = [str(a) for a in graph.graph.output_node().args[0]]
                        else:
                            entry.update(_backward_link(graph, self.entries, forward_id[-1] if forward_id else None))
                        self.entries.append(entry)
                        self._write_index()
                    copied = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))
                except Exception as e:  # noqa: BLE001 - capture must never break the program
                    copied = None
                    if entry is not None:
                        entry["error"] = f"copying the graph failed: {one_line(e)}"
                pending = [entry is not None]

                def run(*args):
                    if pending[0]:
                        pending[0] = False
                        self._capture(entry, copied, [a.detach() if isinstance(a, torch.Tensor) else a for a in args])
                    return graph(*args)

                return run
            return compile_graph

        return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                            partition_fn=min_cut_rematerialization_partition,
                            decompositions=select_decomp_table())(gm, example_inputs)

    def _start(self):
        if self.entries is not None:
            return
        # Under an initialized process group (torchrun, mp.spawn) each rank writes a folder of its own, OUT/rank_R:
        # one folder for all would have the ranks overwrite each other's graphs and index.
        self.distributed = distributed_context()
        if self.distributed is not None:
            self.out = os.path.join(self.out, f"rank_{self.distributed['rank']}")
        os.makedirs(self.out, exist_ok=True)
        old = _read_index(os.path.join(self.out, INDEX))
        if self.append:
            self.entries = old
            return
        for e in old:  # a new capture replaces the last one: remove its graph files, only those
            for name in (e.get("archive"), e.get("inputs")):
                if isinstance(name, str) and _OWN_FILE.fullmatch(name):
                    try:
                        os.remove(os.path.join(self.out, name))
                    except OSError:
                        pass
        self.entries = []

    def _entry(self, gid, gm):
        stem = f"graph_{gid:03d}"
        entry = {"id": gid, "status": "not_called", "archive": stem + ".pt2", "inputs": stem + "_inputs.pt",
                 "ops": None, "dynamo_ops": sum(1 for n in gm.graph.nodes if n.op.startswith("call_")),
                 "compile_id": None, "source": None, "where": None, "first_op": None, "args": [],
                 "command": None, "error": None}
        if self.distributed is not None:
            entry["collectives"] = collectives(gm)
        try:
            entry.update(_source(gm))
        except Exception as e:  # noqa: BLE001
            entry["where"] = f"unknown ({one_line(e)})"
        return entry

    def _capture(self, entry, graph, args):
        start = time.perf_counter()
        base = os.path.join(self.out, entry["archive"][:-4])
        try:
            if graph is None:
                raise RuntimeError(entry["error"])
            names = leaf_names(graph, args, {})  # the placeholders' names, as forward() arguments
            entry["args"] = [describe(v, n) for v, n in zip(args, names)]
            # The inputs first: the graph may mutate them (buffers), and they are useful even when export fails.
            write_inputs(list(args), names, base + "_inputs.pt")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ep, _ = export_program(graph, args, core_aten=self.core_aten)
                write_archive(ep, base + ".pt2", base + "_inputs.pt", entry["args"])
            entry.update(status="ok", ops=count_ops(ep), command=f"pt2diff {entry['archive']} {entry['inputs']}")
        except Exception as e:  # noqa: BLE001 - capture must never break the program
            entry.update(status="export_failed", error=one_line(e))
            if not os.path.exists(base + "_inputs.pt"):
                entry["inputs"] = None
        entry["seconds"] = round(time.perf_counter() - start, 3)
        with self._lock:
            self._write_index()
        self._say(entry)

    def _say(self, entry):
        if self.quiet:
            return
        name = f"graph_{entry['id']:03d}"
        if entry["status"] == "ok":
            msg = f"{name} ({entry['ops']} ops, {entry['where']}) -> {os.path.join(self.out, entry['archive'])}"
        else:
            msg = f"{name} ({entry['where']}) not exported: {entry['error']} (see {os.path.join(self.out, INDEX)})"
        print(f"pt2diff_capture: {msg}", file=sys.stderr)

    def _write_index(self):
        path = os.path.join(self.out, INDEX)
        doc = {"format": FORMAT, "torch": torch.__version__, "graphs": self.entries}
        if self.distributed is not None:
            doc["distributed"] = self.distributed
        text = re.sub(r"\{[^{}\[\]]*(\[[^{}\[\]]*\][^{}\[\]]*)?\}", _one_line_json, json.dumps(doc, indent=1))
        try:
            with open(path + ".tmp", "w") as f:
                f.write(text + "\n")
            os.replace(path + ".tmp", path)
        except OSError as e:
            print(f"pt2diff_capture: cannot write {path}: {one_line(e)}", file=sys.stderr)


def distributed_context():
    """This process's place in an initialized process group, or None (no group, or a world of one): rank, world size,
    backend, and every group it knows by name with its global ranks in group order (the `group` argument of a
    `_c10d_functional` collective is that name; "0" is WORLD)."""
    try:
        import torch.distributed as dist
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() <= 1:
            return None
        ctx = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "backend": str(dist.get_backend())}
    except Exception:  # noqa: BLE001 - capture must never break the program
        return None
    groups = []
    try:  # private: torch.distributed.distributed_c10d._world (torch 2.11-2.14); without it, WORLD only
        from torch.distributed import distributed_c10d as c10d
        for pg, name in c10d._world.pg_names.items():
            ranks = c10d._world.pg_group_ranks.get(pg, {})
            groups.append({"name": str(name), "ranks": [g for g, _ in sorted(ranks.items(), key=lambda kv: kv[1])]})
    except Exception:  # noqa: BLE001
        groups = [{"name": "0", "ranks": list(range(ctx["world_size"]))}]
    ctx["groups"] = groups
    return ctx


def collectives(gm):
    """The collectives a graph issues, in graph order: each `_c10d_functional` / `c10d` op call with its node name,
    op and group (the group name for the functional ones)."""
    out = []
    try:
        for n in gm.graph.nodes:
            if n.op != "call_function":
                continue
            ns = getattr(n.target, "namespace", None) or getattr(getattr(n.target, "_overloadpacket", None), "_qualified_op_name", "")
            name = str(getattr(n.target, "__name__", n.target))
            qualified = str(n.target)
            if not (str(ns).startswith("_c10d_functional") or "_c10d_functional" in qualified or qualified.startswith("c10d.")):
                continue
            # (input, [reduce_op,] [group_size,] group_name): the group is the last string, a reduction the first of two.
            strings = [a for a in list(n.args) + list(n.kwargs.values()) if isinstance(a, str)]
            c = {"node": n.name, "op": qualified.replace("_c10d_functional.", "").split(".")[0] or name,
                 "group": strings[-1] if strings else None}
            if len(strings) >= 2:
                c["reduce"] = strings[0]
            out.append(c)
    except Exception:  # noqa: BLE001 - capture must never break the program
        pass
    return out


def _backward_link(graph, entries, forward_id):
    """A backward graph's link to its forward: the forward's id, and which forward outputs its inputs are (the
    partitioner saves them last among the forward's outputs, in the order the backward reads them; the backward's
    other inputs are the tangents)."""
    inputs = [n.name for n in graph.graph.nodes if n.op == "placeholder"]
    saved = [name for name in inputs if not name.startswith("tangents")]
    link = {"forward": forward_id, "saved": [], "tangents": [name for name in inputs if name.startswith("tangents")]}
    forward = next((e for e in entries if e["id"] == forward_id), None)
    outputs = forward.get("outputs", []) if forward else []
    if saved and len(saved) <= len(outputs):
        first = len(outputs) - len(saved)
        link["saved"] = [{"input": name, "forward_output": first + i} for i, name in enumerate(saved)]
    return link


def _one_line_json(match):
    """An indented JSON object without nested objects (an input, a source location) on one line."""
    text = " ".join(match.group(0).split())
    return text.replace("{ ", "{").replace(" }", "}").replace("[ ", "[").replace(" ]", "]")


def _read_index(path):
    try:
        with open(path) as f:
            doc = json.load(f)
        return [e for e in doc.get("graphs", []) if isinstance(e, dict) and isinstance(e.get("id"), int)]
    except (OSError, ValueError, AttributeError):
        return []


_RESUME = re.compile(r"torch_dynamo_resume_in_(.+)_at_(\d+)")
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _source(gm):
    """Where Dynamo's frame is: its file, first line and function, and the graph's first op."""
    info = {}
    cid = torch._guards.CompileContext.current_compile_id()
    if cid is not None:
        info["compile_id"] = str(cid)
    tc = torch._guards.TracingContext.try_get()
    if tc is not None and tc.traced_code:
        # The frame Dynamo started from, or the first user code it traced when that frame is torch's own
        # (torch.compile of an nn.Sequential starts in torch/_dynamo/external_utils.py).
        user = [c for c in tc.traced_code if not c.co_filename.startswith(_TORCH_DIR)]
        code = (user or tc.traced_code)[0]
        source = {"file": code.co_filename, "line": code.co_firstlineno, "function": code.co_name}
        resumed = _RESUME.fullmatch(code.co_name)
        where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno} in {code.co_name}"
        if resumed:  # Dynamo's function for the code after a graph break
            source.update(function=resumed.group(1), resumed_after_line=int(resumed.group(2)))
            where = f"{os.path.basename(code.co_filename)}:{resumed.group(2)} in {resumed.group(1)}"
            where += ", after a graph break"
        info.update(source=source, where=where)
    for node in gm.graph.nodes:
        frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', node.meta.get("stack_trace") or "")
        if node.op.startswith("call_") and frames:
            file, line, fn, text = frames[-1]
            fn = _RESUME.sub(r"\1", fn)
            info["first_op"] = f"{os.path.basename(file)}:{line} in {fn}: {text.strip()}"
            break
    return info


def _named_copy(gm, deep):
    """A copy of Dynamo's graph module whose inputs are named like the user's code: L_x_ -> x,
    L_self_modules_fc1_parameters_weight_ -> self_fc1_weight (the archive's input names)."""
    new = torch.fx.GraphModule(copy.deepcopy(gm) if deep else gm, copy.deepcopy(gm.graph))  # not lazy: a real forward()
    taken = set()
    for node in new.graph.find_nodes(op="placeholder"):
        name = re.sub(r"^[LG]_|_$", "", str(node.target))
        name = re.sub(r"_(modules|parameters|buffers)_", "_", name)
        name = re.sub(r"\W", "_", name).strip("_") or "input"
        name = "input_" + name if name[0].isdigit() or keyword.iskeyword(name) else name
        unique, k = name, 1
        while unique in taken:
            unique, k = f"{name}_{k}", k + 1
        taken.add(unique)
        node.target = unique  # the forward() argument name; the node keeps its own name in the body
    new.recompile()
    return new
