"""torch.export of a module with its inputs, written as pt2diff reads them: NAME.pt2 + NAME_inputs.pt."""
import contextlib
import dataclasses
import inspect
import io
import keyword
import operator
import os
import re
import sys

import torch
import torch.utils._pytree as pytree

from .normalize import CaptureError, bitcasts, describe, file_values, flat_leaves, one_line, wire_dtype


@dataclasses.dataclass
class Exported:
    """What export_module (and each captured graph) wrote."""
    archive: str        # NAME.pt2: torch.export.save of the program
    inputs: str         # NAME_inputs.pt: a flat tuple, one value per graph input, in signature order
    ops: int            # call_function nodes of the graph (getitem excluded): pt2diff's node count
    input_specs: list   # per input: {name, dtype, shape[, saved_as]} or {name, value}
    program: torch.export.ExportedProgram = dataclasses.field(repr=False)

    @property
    def command(self):
        return f"pt2diff {self.archive} {self.inputs}"


def export_module(module, args, kwargs=None, out="model", core_aten=False):
    """torch.export `module` on (args, kwargs) and write OUT.pt2 and OUT_inputs.pt for pt2diff.

    core_aten=True saves the program after run_decompositions() (core ATen). Returns an Exported."""
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kwargs = dict(kwargs or {})
    ep, names = export_program(module, args, kwargs, core_aten=core_aten)
    leaves = flat_leaves(args, kwargs)
    inputs = write_inputs(leaves, names, out + "_inputs.pt")
    return write_archive(ep, out + ".pt2", inputs, [describe(v, n) for v, n in zip(leaves, names)])


def export_program(module, args, kwargs=None, core_aten=False):
    """torch.export.export (non-strict) of `module` on (args, kwargs) as a program of flat inputs, one per
    leaf of (args, kwargs), named after forward()'s arguments (pair.scale -> pair_scale); returns the
    program and those names.

    The program takes the leaves as they are saved (normalize.py): a dtype libtorch's unpickler cannot
    read arrives as its integer bitcast and is viewed back first. Its outputs are the leaves of the
    module's: a pytree of user classes (namedtuples, ModelOutput) needs no registration to be saved.
    prims ops, which pt2diff cannot run, become their ATen equivalents."""
    kwargs = dict(kwargs or {})
    leaves, spec = pytree.tree_flatten((tuple(args), kwargs))
    names = leaf_names(module, args, kwargs)
    casts = bitcasts(leaves)
    flat = _flat_module(module, spec, casts, names)
    leaves = [v.view(wire_dtype(v.dtype)) if i in casts else v for i, v in enumerate(leaves)]
    chatter = io.StringIO()  # on failure torch.export prints the partial graph to stderr: one line is ours
    try:
        with contextlib.redirect_stderr(chatter):
            ep = torch.export.export(flat, tuple(leaves), strict=False)
    except Exception as e:  # noqa: BLE001 - torch.export's message is the point
        raise CaptureError(f"torch.export failed: {one_line(e)}") from e
    sys.stderr.write(chatter.getvalue())
    prims = _prims()
    used = {n.target for n in ep.graph.nodes if n.op == "call_function"} & prims.keys()
    if used:
        ep = ep.run_decompositions({op: prims[op] for op in used})
    if core_aten:
        ep = ep.run_decompositions()
    return ep, names


def leaf_names(module, args, kwargs):
    """One Python identifier per leaf of (args, kwargs): the forward() argument, then the path inside it."""
    positional = _positional_names(module, len(args))
    names, taken = [], set()
    for path, _ in pytree.tree_flatten_with_path((tuple(args), kwargs))[0]:
        top = path[1]
        parts = [positional[top.idx] if path[0].idx == 0 else str(top.key)]
        for k in path[2:]:
            parts.append(str(getattr(k, "name", getattr(k, "key", getattr(k, "idx", k)))))
        name = re.sub(r"\W", "_", "_".join(parts)) or "input"
        name = "input_" + name if name[0].isdigit() or keyword.iskeyword(name) else name
        unique, n = name, 1
        while unique in taken:
            unique, n = f"{name}_{n}", n + 1
        taken.add(unique)
        names.append(unique)
    return names


def _positional_names(module, n):
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            names += [f"{p.name}_{j}" for j in range(n - len(names))]
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return names[:n] + [f"arg{i}" for i in range(len(names), n)]


def write_inputs(leaves, names, path):
    """torch.save of the flat inputs, normalized; returns the path."""
    _makedirs(path)
    torch.save(tuple(file_values(leaves, names)), path)
    return path


def write_archive(ep, path, inputs, input_specs):
    _makedirs(path)
    torch.export.save(ep, path)
    return Exported(archive=path, inputs=inputs, ops=count_ops(ep), input_specs=input_specs, program=ep)


def count_ops(ep):
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target is not operator.getitem)


def _makedirs(path):
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)


# prims ops (Inductor's decompositions put them in minifier repros) that pt2diff runs as their ATen form.
PRIMS = {
    torch.ops.prims.convert_element_type.default:
        lambda a, dtype: torch.ops.aten._to_copy.default(a, dtype=dtype),
    torch.ops.prims.device_put.default:
        lambda a, device, non_blocking=False: torch.ops.aten._to_copy.default(a, device=device),
    torch.ops.prims.iota.default:
        lambda length, *, start, step, dtype, device, requires_grad: torch.ops.aten.arange.start_step(
            start, start + length * step, step, dtype=dtype, device=device),
}


def _prims():
    """PRIMS, and Inductor's own prims when Inductor registered them (AOTAutograd's graphs, traced with its
    decompositions: the backward of softmax uses prims.fma), each as its eager implementation computes it."""
    out = dict(PRIMS)
    if hasattr(torch.ops.prims, "fma"):  # eager: (a * b) + c, two roundings, as PyTorch runs it outside Inductor
        out[torch.ops.prims.fma.default] = lambda a, b, c: torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor(a, b), c)
    return out


class _FlatInputs(torch.nn.Module):
    """Calls `module` on (args, kwargs) rebuilt from flat leaves (integer bitcasts viewed back to their
    dtypes) and returns the flat leaves of its result. It shares the module's parameters, buffers and
    submodules, so the program names them as the module does (fc.weight, not module.fc.weight)."""

    def __init__(self, module, spec, casts):
        super().__init__()
        if isinstance(module, torch.nn.Module):
            self._parameters, self._buffers, self._modules = module._parameters, module._buffers, module._modules
            self._non_persistent_buffers_set = module._non_persistent_buffers_set
        object.__setattr__(self, "wrapped", module)  # not a submodule: its children are ours already
        self.spec = spec
        self.casts = casts

    def forward(self, *leaves):
        leaves = [v.view(self.casts[i]) if i in self.casts else v for i, v in enumerate(leaves)]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        if isinstance(self.wrapped, torch.fx.GraphModule) and not kwargs:
            # As torch.export runs a GraphModule: node by node, so each op keeps the user's stack trace
            # (Dynamo's graphs carry it) instead of a line of the generated forward().
            with torch.fx.traceback.preserve_node_meta():
                return tuple(pytree.tree_leaves(torch.fx.Interpreter(self.wrapped).run(*args)))
        return tuple(pytree.tree_leaves(self.wrapped(*args, **kwargs)))


def _flat_module(module, spec, casts, names):
    """A _FlatInputs whose forward() takes one argument per name: torch.export names the inputs so."""
    def forward(self, *leaves):
        return _FlatInputs.forward(self, *leaves)

    arg = inspect.Parameter.POSITIONAL_OR_KEYWORD
    forward.__signature__ = inspect.Signature([inspect.Parameter(n, arg) for n in ["self", *names]])
    cls = type(f"Flat{type(module).__name__}", (_FlatInputs,), {"forward": forward})
    return cls(module, spec, casts)
