"""Dynamic shapes: a region compiled as the program compiles (docs/dynamic-shapes.md).

The dims an archive was exported dynamic (`torch.export.Dim`: a symbol in its placeholders' `val`, its range in
`range_constraints`) are marked on the region's example inputs as a user marks them (`torch._dynamo.mark_dynamic(t,
dim, min=, max=)`), so Dynamo, AOTAutograd and Inductor compile them symbolic: the kernels take the size as an
argument, with the masks and index arithmetic that go with it. What the compile made of them is read from its
ShapeEnv: the guards (the conditions a later call must meet to reuse the compiled code), each symbol's range and the
input dim it stands for. A later call at another size runs the same compiled code unless a guard fails; a recompile
is counted (`Recorder.compiles`) and said in the run's reply.
"""
import re

import torch


def _bound(value):
    """An int range bound, None for an infinite one (torch's int_oo)."""
    if getattr(value, "is_finite", True) is False:
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def dynamic_dims(by_name, input_names, range_constraints):
    """The dims of the region's inputs the archive made dynamic: [{input, index, dim, symbol, min, max}] in input
    order. `by_name`: value name -> fx node of the archive; `range_constraints`: the program's (symbol -> range).
    A derived dim ("2*s77") has no range of its own (min and max None): the symbols it is made of bound it."""
    ranges = {str(k): v for k, v in range_constraints.items()}
    dims = []
    for index, name in enumerate(input_names):
        node = by_name.get(name)
        val = node.meta.get("val") if node is not None else None
        if isinstance(val, torch.SymInt) and not val.node.expr.is_number:  # a size passed as an int (dim None)
            symbol = str(val.node.expr)
            r = ranges.get(symbol)
            dims.append({"input": name, "index": index, "dim": None, "symbol": symbol,
                         "min": _bound(r.lower) if r is not None else None,
                         "max": _bound(r.upper) if r is not None else None})
            continue
        if not isinstance(val, torch.Tensor):
            continue
        for d, size in enumerate(val.shape):
            if not isinstance(size, torch.SymInt):
                continue
            symbol = str(size.node.expr)
            r = ranges.get(symbol)
            dims.append({"input": name, "index": index, "dim": d, "symbol": symbol,
                         "min": _bound(r.lower) if r is not None else None,
                         "max": _bound(r.upper) if r is not None else None})
    return dims


def mark(example, dims, strict=True):
    """Marks `dims` (dynamic_dims) dynamic on the example inputs, with the exported range where the dim has one
    (`strict`: torch._dynamo.mark_dynamic, which fails the compile when the program forces the dim to one size;
    otherwise maybe_mark_dynamic, which lets it specialize). Dynamo keeps sizes 0 and 1 static (a symbol's range
    starts at 2 in the compile): a lower bound under 2 is raised to 2, the compile's own rule, and the range the
    compile used is what the reply reports."""
    for d in dims:
        t = example[d["index"]]
        if not isinstance(t, torch.Tensor) or d["dim"] is None:
            continue
        if not strict:
            torch._dynamo.maybe_mark_dynamic(t, d["dim"])
            continue
        low = None if d["min"] is None else max(d["min"], 2)
        high = d["max"]
        if high is not None and low is not None and high < low:
            high = None  # a range of sizes 0..1 only: Dynamo specializes those whatever is asked
        torch._dynamo.mark_dynamic(t, d["dim"], min=low, max=high)


def dynamic_ints(dims):
    """A config patch making the region's int inputs that hold a symbolic size (dims with dim None) dynamic, as
    torch.compiler.config.dynamic_sources does for a user's ints; a no-op on a torch without that setting or
    without such inputs (Dynamo then specializes them: the compile may force the dims they size)."""
    import contextlib

    names = [f"L['{d['input']}']" for d in dims if d["dim"] is None]
    if not names or not hasattr(torch.compiler.config, "dynamic_sources"):
        return contextlib.nullcontext()
    return torch.compiler.config.patch(dynamic_sources=",".join(names))


def violation(error):
    """The line of a ConstraintViolationError that says what the compile could not keep ("Not all values of x.size(0) in
    the specified range x.size(0) <= 16 satisfy the generated guard 2 <= x.size(0) and x.size(0) <= 15"), inputs named
    as the user names them; else the error's first line."""
    while error is not None and type(error).__name__ != "ConstraintViolationError":
        error = error.__cause__ or error.__context__
    text = str(error) if error is not None else ""
    lines = [ln.strip().removeprefix("- ").strip() for ln in text.splitlines() if ln.strip().startswith("- ")]
    line = lines[0] if lines else (text.splitlines() or [""])[0]
    line = _SOURCE.sub(lambda m: f"{m.group(1)}.size({m.group(2)})", line)
    return " ".join(_INT.sub(lambda m: m.group(1), line).split())


def is_specialization(error):
    """Whether a compile failed because a dim marked dynamic was forced to one size (Dynamo's ConstraintViolationError,
    raised through the backend's wrapping)."""
    while error is not None:
        if type(error).__name__ == "ConstraintViolationError":
            return True
        error = error.__cause__ or error.__context__
    return False


def export_dims(dims, count):
    """`dims` as torch.export's dynamic_shapes for `count` inputs: a Dim per archive symbol with its range (dims that
    share a symbol share the Dim), Dim.AUTO for a derived dim."""
    from torch.export import Dim

    by_symbol = {}
    spec = [None] * count
    for d in dims:
        if d["dim"] is None:
            continue  # an int input: export keeps ints as they are given
        if d["symbol"].isidentifier():
            if d["symbol"] not in by_symbol:
                low = None if d["min"] is None else max(d["min"], 2)
                by_symbol[d["symbol"]] = Dim(d["symbol"], min=low if low is not None else 2,
                                             max=d["max"] if d["max"] is not None else int(2**62))
            dim = by_symbol[d["symbol"]]
        else:
            dim = Dim.AUTO
        spec[d["index"]] = {**(spec[d["index"]] or {}), d["dim"]: dim}
    return tuple(spec)


_SOURCE = re.compile(r"L\['([^']+)'\]\.size\(\)\[(\d+)\]")
_INT = re.compile(r"L\['([^']+)'\]")


def _readable(source):
    """"L['x'].size()[0]" as "x.size(0)", "L['n']" as "n": an input dim, or an int input, as the user names it."""
    m = _SOURCE.fullmatch(source)
    if m:
        return f"{m.group(1)}.size({m.group(2)})"
    m = _INT.fullmatch(source)
    return m.group(1) if m else source


class Recorder:
    """The Inductor backend (torch._dynamo.lookup_backend("inductor"): what torch.compile(backend="inductor") calls),
    recording each compile's ShapeEnv: pass `Recorder.backend` to torch.compile."""

    def __init__(self):
        self.compiles = 0
        self.guards = []  # the latest compile's guards, in the inputs' terms ("x.size(0) <= 64")
        self.symbols = []  # [{symbol (the compile's), source ("x.size(0)"), min, max}]
        self._inductor = torch._dynamo.lookup_backend("inductor")

    def backend(self, gm, example_inputs):
        compiled = self._inductor(gm, example_inputs)
        self.compiles += 1
        fake = torch._guards.detect_fake_mode(example_inputs)
        env = getattr(fake, "shape_env", None)
        if env is not None:
            self._read(env)
        return compiled

    def _read(self, env):
        import sympy

        names = {}
        symbols = []
        for symbol, sources in env.var_to_sources.items():
            if not sources:
                continue
            readable = _readable(sources[0].name)
            names[symbol] = sympy.Symbol(readable)
            r = env.var_to_range.get(symbol)
            symbols.append({"symbol": str(symbol), "source": readable,
                            "min": _bound(r.lower) if r is not None else None,
                            "max": _bound(r.upper) if r is not None else None})
        guards = []
        for g in env.guards:
            text = str(g.expr.xreplace(names))
            if text not in guards:
                guards.append(text)
        self.symbols = sorted(symbols, key=lambda s: s["source"])
        self.guards = guards

    def describe(self, dims, dynamic, aoti=False, specialized=""):
        """The compile reply's `shapes`: `mode` ("dynamic" when a dim was compiled symbolic, else "static"), why when
        static, the archive's dynamic dims, the compile's symbols with their ranges, its guards, and `compiles` so far.
        AOTInductor's package checks the exported ranges itself: no ShapeEnv is read, symbols and guards are empty.
        `specialized`: what the compile could not keep when a marked dim failed (violation()): the compile was made
        again with maybe_mark_dynamic, and is dynamic if a symbol survived (the range it kept is in `symbols`)."""
        if not dims:
            mode, why = "static", "no input of the region has a dynamic dim"
        elif not dynamic:
            mode, why = "static", "asked static (--static): every size specialized to the inputs of the compile"
        elif specialized and not self.symbols:
            mode, why = "static", "the program forces the dynamic dims to one size: " + specialized
        else:
            mode, why = "dynamic", ""
        if mode == "dynamic" and not aoti and not self.symbols:
            mode, why = "static", "the compile specialized every dim marked dynamic"
        reply = {"mode": mode, "dims": [{k: d[k] for k in ("input", "dim", "symbol", "min", "max")} for d in dims],
                 "symbols": self.symbols, "guards": self.guards, "compiles": self.compiles}
        if why:
            reply["why_static"] = why
        if specialized and mode == "dynamic":
            reply["note"] = ("the compile could not keep the exported range (" + specialized + "): compiled with "
                             "maybe_mark_dynamic, sizes outside the range it kept recompile")
        return reply
