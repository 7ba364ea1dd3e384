"""The exploded compile's distinct ops: each op compiled once per signature, run once per occurrence.

An exploded region (regions.region_module with exploded=True) is one graph of independent ops, each reading
placeholders only. A model's layers repeat: an 8-layer Llama-style decoder's 332 ops are 23 distinct ones (the
same target, the same non-tensor arguments, the same input sizes, strides, dtypes and devices). Compiling every
occurrence makes the exploded compile as long as the whole graph's (19.5 s against 16 s for a 1B decoder on an
H200, docs/performance.md): Inductor lowers, schedules and generates code per node.

`DistinctOps` compiles a few graphs, each holding one occurrence (the representative) of some distinct ops, and
calls each as many times as its most frequent op occurs: the k-th call gives each of its ops' k-th occurrence its
own inputs (an op with fewer occurrences is computed again in the later calls, its result unused). One graph for
every op would compute the rarer ones again to no use: a 4-layer decoder's language-model head (one occurrence)
16 times beside its q/k/v/o projections, 32.3 s against 4.7 s for the exploded run on the 2-core CPU. Every
number of occurrences its own graph would cost a compile each (about 0.5 s on that CPU) where the waste is
microseconds (a GPU, small ops). `graphs()` weighs the two: an op count's ops get their own graph only where
computing them again would cost more than compiling it, by a rough estimate of each op's time (`op_seconds`).
Each op is still compiled alone on inputs of its own sizes and strides, by the same torch.compile entry point;
what it no longer shares is a graph with other ops that read the same input (Inductor may fuse independent
pointwise ops reading one buffer into one kernel: the same arithmetic per element).

Correctness does not rest on the grouping alone: the later calls run under Dynamo's `error_on_recompile`, so an
input whose metadata the guards reject (an occurrence that is not what its representative was compiled for)
raises instead of recompiling or, past the recompile limit, silently running eager; `DistinctOps` then compiles
the whole exploded graph as before (`fallback`). A region with a seeded random op (its stream would change with
the number of calls) or an op that writes its input (ops run in another order, and some more than once) is not
deduplicated (`plan` returns None); a higher-order op (a subgraph argument) is compiled on its own.
"""
import contextlib
import operator

import torch

def _tensor_key(t):
    """What a signature says of a tensor input: what Dynamo guards and Inductor specializes on."""
    t = t.detach()  # as each call passes it (DistinctOps._call_inputs)
    return ("tensor", type(t).__name__, tuple(t.shape), tuple(t.stride()), t.dtype, t.device, t.layout,
            t.storage_offset(), t.data_ptr() % 16 == 0 if t.device.type != "meta" else True)


def _value_key(v):
    """What a signature says of an input value."""
    if isinstance(v, torch.Tensor):
        return _tensor_key(v)
    # ints, floats, bools and the like are specialized by Dynamo (dynamic=False): their value is the signature
    return ("value", type(v).__name__, repr(v))


class _NotDistinct(Exception):
    """A node that cannot share its compile (a subgraph argument)."""


def _argument(node, schema, name):
    """The value of argument `name` of `node` (positional, keyword or its default), or None."""
    for i, a in enumerate(schema.arguments):
        if a.name == name:
            if i < len(node.args) and not a.kwarg_only:
                return node.args[i]
            if name in node.kwargs:
                return node.kwargs[name]
            return a.default_value if a.has_default_value() else None
    return None


def _order_matters(node):
    """A seeded random op (its stream would change with the number of calls; attention with dropout_p 0, which
    draws nothing, aside) or one that writes an input (an op that occurs less often than the most frequent is
    called again, and ops run in another order)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        if _argument(node, schema, "dropout_p") != 0:
            return True
    return schema.is_mutable


def op_signature(node, value_of, requested_parts):
    """The signature of exploded op `node`: equal signatures compile to the same code on inputs of the same
    metadata. `value_of`: placeholder -> its value in this call; `requested_parts`: the parts of the node the
    region returns (None for the node itself, an int for a getitem). Returns (key, the node's distinct
    placeholders in order of first use); raises _NotDistinct for a node that must be compiled alone."""
    inputs = []

    def enc(a):
        if isinstance(a, torch.fx.Node):
            if a.op != "placeholder":
                raise _NotDistinct(a.op)
            if a not in inputs:
                inputs.append(a)
            return ("input", inputs.index(a), _value_key(value_of[a]))
        if isinstance(a, (list, tuple)):
            return (type(a).__name__, tuple(enc(x) for x in a))
        if isinstance(a, dict):
            return ("dict", tuple((k, enc(v)) for k, v in sorted(a.items())))
        return ("const", type(a).__name__, repr(a))

    key = (str(node.target), enc(node.args), enc(dict(node.kwargs)), tuple(sorted(requested_parts, key=repr)))
    return key, inputs


class Plan:
    """How the exploded graph's ops share compiles. `groups`: lists of ops (fx nodes of the exploded graph),
    each list's ops alike, the first its representative; `outputs`: for each output of the exploded graph,
    ("input", placeholder position) or ("op", group index, occurrence, part) with part None for the node itself
    or the getitem index; `inputs`: for each group and occurrence, the placeholder positions the op reads, in
    its representative's order; `costs`: each group's op_cost, for `graphs`."""

    def __init__(self, groups, inputs, outputs, costs=None):
        self.groups, self.inputs, self.outputs = groups, inputs, outputs
        self.costs = costs or [(0, 0)] * len(groups)  # each group's op_cost

    def graphs(self, device_type="cpu"):
        """The graphs to compile: (calls, group indices) each, fewest calls first. Ops that occur equally often share
        a graph; the ops of a rarer count join the next graph up (and are computed again in its extra calls) unless
        that waste, by `op_seconds` on `device_type`, exceeds GRAPH_COMPILE_SECONDS."""
        by_count = {}
        for g, group in enumerate(self.groups):
            by_count.setdefault(len(group), []).append(g)
        graphs = []  # (calls, groups), most calls first while built
        for count, groups in sorted(by_count.items(), reverse=True):
            if graphs:
                calls, above = graphs[-1]
                wasted = (calls - count) * sum(op_seconds(self.costs[g], device_type) for g in groups)
                if wasted <= GRAPH_COMPILE_SECONDS:
                    graphs[-1] = (calls, sorted(above + groups))
                    continue
            graphs.append((count, groups))
        return graphs[::-1]


# A rough device model, for choosing how many graphs DistinctOps compiles, never for numbers: what one more
# compiled graph costs (Dynamo, AOTAutograd and Inductor's fixed work, and on the CPU one more C++ build: 0.3-0.6 s
# a graph on the 2-core machine) against the time an op takes: its multiply-adds at a device's matrix rate plus its
# elements at its memory rate (the 2-core CPU: about 2e10 bf16 FLOP/s in ATen's matrix products, measured as 575
# GFLOP in 27.6 s; an H100/H200: of the order of 1e14 and 1e11, plus a launch).
GRAPH_COMPILE_SECONDS = 0.5
DEVICE_RATES = {"cpu": (2e10, 1e9, 0.0), "cuda": (1e14, 1e11, 1e-5)}  # FLOP/s, elements/s, seconds per op


def _numel(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def op_cost(node, value_of):
    """(FLOP, elements) of one call of exploded op `node` on the values `value_of` (placeholder -> value) of its
    inputs: a matrix product's, attention's or a convolution's multiply-adds times two (a convolution taken at
    stride 1), and the elements it reads, counted twice for what it writes. An estimate, for Plan.graphs."""
    name = str(node.target).split(".")[1] if str(node.target).startswith("aten.") else ""
    shapes = [tuple(value_of[a].shape) if isinstance(value_of.get(a), torch.Tensor) else None
              for a in node.args if isinstance(a, torch.fx.Node)]
    try:
        elements = 2 * sum(_numel(x) for x in shapes if x)
        flops = 0
        if name in ("mm", "bmm", "matmul", "linear") and len(shapes) > 1 and shapes[0] and shapes[1]:
            a, b = shapes[:2]
            out_features = b[0] if name == "linear" else b[-1] if len(b) > 1 else 1
            flops = 2 * _numel(a) * out_features
        elif name in ("addmm", "baddbmm", "addbmm") and len(shapes) > 2 and shapes[1] and shapes[2]:
            flops = 2 * _numel(shapes[1]) * shapes[2][-1]
        elif "attention" in name and len(shapes) > 2 and all(shapes[:3]):
            q, k, v = shapes[:3]  # (..., L, E), (..., S, E), (..., S, Ev)
            flops = 2 * _numel(q[:-1]) * k[-2] * (q[-1] + v[-1])
        elif name.startswith("convolution") and len(shapes) > 1 and shapes[0] and shapes[1]:
            flops = 2 * _numel(shapes[0]) // max(1, shapes[0][1]) * _numel(shapes[1])
        return int(flops), int(elements)
    except (TypeError, ValueError, IndexError):  # a symbolic size: no estimate
        return 0, 0


def op_seconds(cost, device_type="cpu"):
    """A rough time of one call of an op of `cost` (op_cost's (FLOP, elements)) on a `device_type` device ("cpu";
    "cuda" and others alike)."""
    flop_rate, element_rate, launch = DEVICE_RATES.get(device_type, DEVICE_RATES["cuda"])
    return cost[0] / flop_rate + cost[1] / element_rate + launch


def plan(gm, example):
    """The Plan of exploded graph `gm` called on `example` (its placeholders' values, in order), or None where
    nothing is gained (no op occurs twice) or deduplication cannot hold (seeded random ops, ops that write their
    inputs)."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {p: i for i, p in enumerate(placeholders)}
    value_of = dict(zip(placeholders, example))
    ops = [n for n in graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    if any(_order_matters(n) for n in ops):
        return None
    op_set = set(ops)
    returned = list(graph.output_node().args[0])
    parts = {n: [] for n in ops}
    for o in returned:
        if o in op_set:
            parts[o].append(None)
        elif o.op == "call_function" and o.target is operator.getitem and o.args[0] in op_set:
            parts[o.args[0]].append(o.args[1])
        elif o.op != "placeholder":
            return None
    by_key, groups, inputs = {}, [], []
    where = {}  # op -> (group, occurrence)
    for n in ops:
        try:
            key, reads = op_signature(n, value_of, parts[n])
        except _NotDistinct:
            key, reads = ("alone", n.name), [a for a in n.all_input_nodes if a.op == "placeholder"]
        if key not in by_key:
            by_key[key] = len(groups)
            groups.append([])
            inputs.append([])
        g = by_key[key]
        where[n] = (g, len(groups[g]))
        groups[g].append(n)
        inputs[g].append([position[a] for a in reads])
    if len(groups) == len(ops):
        return None
    outputs = []
    for o in returned:
        if o.op == "placeholder":
            outputs.append(("input", position[o]))
        elif o in op_set:
            outputs.append(("op", *where[o], None))
        else:
            outputs.append(("op", *where[o.args[0]], o.args[1]))
    return Plan(groups, inputs, outputs, [op_cost(group[0], value_of) for group in groups])


def representatives_module(gm, p, groups=None):
    """A GraphModule of the first op of each group of Plan `p` (of the group indices `groups`, default all), reading
    its own placeholders and returning, for each of those groups in order, the parts the region asks of that op
    (the node, or its getitems in ascending order). Returns (module, for each of those groups the list of parts
    it returns)."""
    new = torch.fx.Graph()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    copies, returned, parts_of = {}, [], []
    groups = range(len(p.groups)) if groups is None else groups
    wanted = {g: sorted({o[3] for o in p.outputs if o[0] == "op" and o[1] == g}, key=lambda x: -1 if x is None else x)
              for g in groups}
    for g in groups:
        group = p.groups[g]
        rep = group[0]
        # In the plan's order (op_signature's): the order each occurrence's inputs are passed in.
        reads = [placeholders[i] for i in p.inputs[g][0]]
        for i, a in enumerate(reads):
            copies[a] = new.placeholder(f"g{g}_in{i}")
        copy = new.node_copy(rep, lambda a: copies[a] if a in copies else new.get_attr(a.target))
        copy.meta = dict(rep.meta)
        for part in wanted[g]:
            if part is None:
                returned.append(copy)
            else:
                item = new.call_function(operator.getitem, (copy, part))
                item.meta = dict(next(u.meta for u in rep.users if u.target is operator.getitem and u.args[1] == part))
                returned.append(item)
        parts_of.append(wanted[g])
    new.output(tuple(returned))
    return torch.fx.GraphModule(gm, new), parts_of


class DistinctOps:
    """The exploded graph `gm` as a callable with the whole graph's signature (its placeholders in, its outputs
    out), computed by compiling one graph per entry of `p.graphs(device_type)` (`compile_fn(module)` -> a callable, such as
    torch.compile's), each holding one occurrence of its ops, and calling it once per occurrence. `compile_fn(gm)`
    compiles the whole graph instead when an occurrence's inputs are not what their representative was compiled
    for (`fallback` says why). `compiling()`: a context manager entered around the calls that compile (the
    Inductor config asked for)."""

    def __init__(self, gm, p, compile_fn, compiling=contextlib.nullcontext, device_type="cpu"):
        self.gm, self.plan, self.compile_fn, self.compiling = gm, p, compile_fn, compiling
        self.buckets = []        # (calls, group indices, compiled graph, parts each group returns)
        for calls, groups in p.graphs(device_type):
            module, parts_of = representatives_module(gm, p, groups)
            self.buckets.append((calls, groups, compile_fn(module), parts_of))
        self.calls = 0           # calls made of the compiled graphs (each one's first is its compile)
        self.fallback = None     # why the whole graph was compiled instead, or None
        self._whole = None

    @property
    def distinct(self):
        """How many ops were compiled (one per group)."""
        return len(self.plan.groups)

    @property
    def graphs(self):
        """How many graphs were compiled (Plan.graphs)."""
        return len(self.buckets)

    def _call_inputs(self, values, groups, k):
        args = []
        for g in groups:
            occurrence = min(k, len(self.plan.groups[g]) - 1)  # an op with fewer occurrences repeats its last (result unused)
            args.extend(values[i] for i in self.plan.inputs[g][occurrence])
        # A fresh plain tensor per placeholder, in every call: Dynamo guards an input's type (a weight is a
        # Parameter, the same weight's second use would not be) and inputs that are the same object.
        return [a.detach() if isinstance(a, torch.Tensor) else a for a in args]

    def first_call(self, values):
        """The compiles: each bucket's graph called once, on the first occurrence of each of its ops."""
        with self.compiling():
            for _, groups, compiled, _ in self.buckets:
                compiled(*self._call_inputs(values, groups, 0))
                self.calls += 1

    def __call__(self, *values):
        if self._whole is not None:
            return self._whole(*values)
        results = {}
        try:
            with torch._dynamo.config.patch(error_on_recompile=True):
                for count, groups, compiled, parts_of in self.buckets:
                    for k in range(count):
                        got = compiled(*self._call_inputs(values, groups, k))
                        self.calls += 1
                        pos = 0
                        for g, parts in zip(groups, parts_of):
                            for part in parts:
                                if k < len(self.plan.groups[g]):
                                    results[(g, k, part)] = got[pos]
                                pos += 1
        except torch._dynamo.exc.RecompileError as e:
            self.fallback = f"an occurrence does not match its op's compile ({str(e).splitlines()[0][:200]})"
            self._whole = self.compile_fn(self.gm)
            with self.compiling():
                return self._whole(*values)
        return tuple(values[o[1]] if o[0] == "input" else results[o[1:]] for o in self.plan.outputs)
