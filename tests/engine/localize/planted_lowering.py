"""A compiler bug planted in Inductor's lowering of one ATen op, shared by every process that must see it:
the pt2diff worker with the bug (lowering_bug_worker.py) and the accuracy-minifier benchmark
(bench/minifier_bench.py, which needs it in the minifier's own processes too: bench/minifier_plant/).

Configured by the environment, so that child processes inherit it:
- PT2DIFF_PLANT_OP: the op whose lowering is wrong ("relu", "div.Tensor", "add.Tensor"; default relu); an op
  Inductor decomposes instead of lowering (the backward ops: "native_layer_norm_backward") gets the bug in its
  decomposition (its first result scaled);
- PT2DIFF_PLANT_ERROR: its result is scaled by (1 + ERROR) inside the generated kernel, default 1e-2;
  "nan" makes it log(-result) instead (NaN and -Inf where eager is finite);
- PT2DIFF_PLANT_ARG: if set (an index), the lowering's positional argument of that index is scaled instead of its
  result: for a lowering that writes in place, what it writes is wrong ("index_put_" with 2: the values a scatter
  Inductor reinplaced into its input writes; "copy_" with 1: what Inductor copies back into a written input);
- PT2DIFF_PLANT_SHAPE: if set ("2,4,8,8"), only results of that shape are wrong: the bug is in one op
  at one shape, as real lowering bugs often are; unset, every shape;
- PT2DIFF_PLANT_WHERE: if set, which elements are wrong: "tail:N" only those past the last multiple of N of the
  flattened result (a vectorized loop's tail of N lanes: the error shows only at sizes that are not multiples of N);
  "dynamic" only the last row, and only when the result's size is symbolic (a mask that a dynamic compile gets wrong
  and a static one does not); "fused" every element, but only when the op's first argument is a pointwise
  computation Inductor has not realized, i.e. its producer is fused into the op's kernel (a fusion bug: the op
  compiled alone on graph inputs is right, the window with its producer is wrong); unset, every element
  (docs/dynamic-shapes.md);
- PT2DIFF_PLANT_LOG: if set, a file that gets one line per Inductor compile ("compile NODES PID": the
  FX graph's call_function nodes) and per wrong lowering applied ("planted SHAPE PID"), appended by every
  process, to count them.

The graph Inductor lowers is the real one (no FX pass rewrites it), so the bug is in the compiled code
only, as a wrong lowering would be.

    import planted_lowering; planted_lowering.plant()
"""
import os

_planted = False


def _log(line):
    path = os.environ.get("PT2DIFF_PLANT_LOG")
    if path:
        with open(path, "a") as f:  # one short write per line: O_APPEND keeps lines whole across processes
            f.write(f"{line} {os.getpid()}\n")


def _shape(value):
    """The static shape of a lowering's result (a TensorBox), or None when it has none."""
    try:
        return tuple(int(s) for s in value.get_size())
    except (AttributeError, TypeError):
        return None


def plant():
    """Replaces the lowering named by PT2DIFF_PLANT_OP with a wrong one (once per process) and, when
    PT2DIFF_PLANT_LOG is set, counts Inductor's compiles (GraphLowering.compile_to_module)."""
    global _planted
    if _planted:
        return
    _planted = True
    import torch
    from torch._inductor import graph, lowering

    name, _, overload_name = os.environ.get("PT2DIFF_PLANT_OP", "relu").partition(".")
    op = getattr(getattr(torch.ops.aten, name), overload_name or "default")
    error = os.environ.get("PT2DIFF_PLANT_ERROR", "1e-2")
    shape_text = os.environ.get("PT2DIFF_PLANT_SHAPE", "").strip()
    shape = tuple(int(s) for s in shape_text.split(",")) if shape_text else None
    if op not in lowering.lowerings and op.overloadpacket not in lowering.lowerings:
        _plant_in_decomposition(op, error, shape)  # a backward op: Inductor lowers its decomposition
        _count_compiles(graph)
        return
    overload = op if op in lowering.lowerings else op.overloadpacket
    right = lowering.lowerings[overload]

    arg = os.environ.get("PT2DIFF_PLANT_ARG", "").strip()
    # Read now, as the others: a worker forked by the worker server runs with its client's environment.
    where = os.environ.get("PT2DIFF_PLANT_WHERE", "").strip()

    def wrong_argument(*args, **kwargs):
        args = list(args)
        i = int(arg)
        _log(f"planted {'x'.join(map(str, _shape(args[i]) or ()))}")
        args[i] = lowering.lowerings[torch.ops.aten.mul.Tensor](args[i], 1.0 + float(error))
        return right(*args, **kwargs)

    def wrong(*args, **kwargs):
        if arg:
            return wrong_argument(*args, **kwargs)
        result = right(*args, **kwargs)
        got = _shape(result)
        if shape is not None and got != shape:
            return result
        if where == "fused":
            if not (args and _fused_producer(args[0])):
                return result
        elif where:
            return _wrong_where(result, where, float(error))
        _log(f"planted {'x'.join(map(str, got or ()))}")
        if error == "nan":
            return lowering.lowerings[torch.ops.aten.log.default](lowering.lowerings[torch.ops.aten.neg.default](result))
        return lowering.lowerings[torch.ops.aten.mul.Tensor](result, 1.0 + float(error))

    lowering.lowerings[overload] = wrong
    _count_compiles(graph)


def _fused_producer(value):
    """Whether a lowering's argument (a TensorBox) is a pointwise computation not yet realized into a buffer: its
    producer is inlined into the kernel of the op that reads it. A graph input or a realized buffer is not."""
    from torch._inductor import ir

    storage = getattr(value, "data", None)
    return isinstance(storage, ir.StorageBox) and isinstance(storage.data, ir.Pointwise)


def _wrong_where(result, where, error):
    """`result` (a lowering's TensorBox) scaled by (1 + error) only at some elements, decided in the generated kernel
    from its index and its (possibly symbolic) sizes: "tail:N" past the last multiple of N of the flattened result,
    "dynamic" the last row when the size is symbolic (a static size leaves the result right)."""
    import sympy
    import torch
    from torch._inductor import ir
    from torch._inductor.virtualized import ops
    from torch.utils._sympy.functions import FloorDiv

    size = list(result.get_size())
    dtype = result.get_dtype()
    symbolic = any(not sympy.sympify(s).is_number for s in size)
    if where == "dynamic" and not symbolic:
        return result
    _log(f"planted {where} {'x'.join(map(str, size))}")
    loader = result.make_loader()
    numel = sympy.Integer(1)
    for s in size:
        numel = numel * s
    lanes = int(where.partition(":")[2] or 16) if where.startswith("tail") else 0

    def inner_fn(index):
        value = loader(index)
        if lanes:
            flat, stride = sympy.Integer(0), sympy.Integer(1)
            for i, s in reversed(list(zip(index, size))):
                flat, stride = flat + i * stride, stride * s
            wrong = ops.ge(ops.index_expr(flat, torch.int64), ops.index_expr(FloorDiv(numel, lanes) * lanes, torch.int64))
        else:
            wrong = ops.ge(ops.index_expr(index[0], torch.int64), ops.index_expr(size[0] - 1, torch.int64))
        return ops.where(wrong, ops.mul(value, ops.constant(1.0 + error, dtype)), value)

    return ir.Pointwise.create(device=result.get_device(), dtype=dtype, inner_fn=inner_fn, ranges=size)


def _plant_in_decomposition(op, error, shape):
    """For an op Inductor has no lowering of (the backward ops: native_layer_norm_backward, _softmax_backward_data,
    gelu_backward ...): its decomposition in Inductor's table scales its first result by (1 + ERROR). The
    decomposition runs while AOTAutograd traces the graph Inductor lowers, in the compiler's process only."""
    import torch
    from torch._inductor import decomposition

    right = decomposition.decompositions[op]

    def wrong(*args, **kwargs):
        result = right(*args, **kwargs)
        first = result[0] if isinstance(result, (tuple, list)) else result
        if first is None or (shape is not None and tuple(first.shape) != shape):
            return result
        _log(f"planted {'x'.join(map(str, first.shape))}")
        bad = torch.log(-first) if error == "nan" else first * (1.0 + float(error))
        return (bad, *result[1:]) if isinstance(result, (tuple, list)) else bad

    decomposition.decompositions[op] = wrong
    decomposition.fast_random_decomps.cache_clear()  # select_decomp_table()'s copy of the table


def _count_compiles(graph):
    if os.environ.get("PT2DIFF_PLANT_LOG"):
        compile_to_module = graph.GraphLowering.compile_to_module

        def counted(self, *args, **kwargs):
            nodes = sum(1 for n in self.graph.nodes if n.op == "call_function")
            _log(f"compile {nodes}")
            return compile_to_module(self, *args, **kwargs)

        graph.GraphLowering.compile_to_module = counted
