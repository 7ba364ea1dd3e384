"""pt2diff from Python: the engine in the process where the model lives (docs/python.md).

    import pt2diff, torch
    ep = torch.export.export(model, (x,))
    r = pt2diff.diff(ep, (x,), compiled="inductor")      # in memory: no archive or inputs file
    print(r.verdict, r.outputs[0].reason)                # the fields of the CLI's --json report
    print(r.to_text())                                   # the CLI's report; r.to_json() its --json

``program`` is a :class:`Program` from :func:`load`, a path to a .pt2 archive, a
``torch.export.ExportedProgram`` (serialized in memory) or an ``nn.Module`` (exported with the inputs
first). ``inputs`` is a tensor, a tuple or list (positional), a dict (by name) or ``(args, kwargs)``,
as torch tensors; None takes the archive's sample inputs. Errors are :class:`Error` subclasses whose
``str()`` is the line the CLI prints after "pt2diff: ".

Options are keyword arguments named after the CLI's flags (``--no-exploded`` is ``exploded=False``). Besides
the table below (made from the engine's option table at import, with each default), ``random_inputs``
(``--random-inputs``: draw inputs from the graph's metadata; False) and ``progress`` (a progress line on
stderr while compiling, when stderr is a terminal; True, False: never); :func:`sweep` takes its grid as
``tol``, ``multiplier`` and ``localize`` (see there). ``device=None`` is the GPU the inputs, or an
nn.Module's weights, are on; else where the graph was exported when this machine has it; else "cpu".
``inductor_config`` is a list of "key=value" or a dict {key: python_value}; sizes (``max_memory``,
``gpu_memory``) are bytes, "16G" or "none"; paths may be os.PathLike.
"""

from __future__ import annotations

import io
import os
from typing import Any

import torch  # loads libtorch and libtorch_python, which the native module links against

try:
    from . import _pt2diff
except ImportError as e:  # pragma: no cover - an installation without the module
    raise ImportError(f"pt2diff: the native module pt2diff._pt2diff cannot be imported ({e}): build it with "
                      "scripts/setup.sh or pip install --no-build-isolation ./python (docs/python.md)") from e
from ._pt2diff import (BadArchiveError, BadInputsError, Error, InternalError, Program, UnsupportedError,
                       UsageError)
from ._results import DiffResult, DistResult, Explanation, OutputValues, RecheckResult, Record, SizeSweepResult, SweepResult

__all__ = ["load", "diff", "diff_training_step", "diff_distributed", "explain", "sweep", "sweep_sizes", "recheck", "cli_flags", "Program", "DiffResult",
           "SweepResult", "SizeSweepResult", "RecheckResult", "DistResult", "Explanation",
           "Record", "OutputValues", "Error", "UsageError", "BadArchiveError", "BadInputsError", "UnsupportedError",
           "InternalError"]

#: The name an ExportedProgram (or nn.Module) serialized in memory goes by in messages and reports.
EXPORTED_PROGRAM_NAME = "<ExportedProgram>"
#: The name of inputs given as Python objects, where the CLI names the inputs file.
PYTHON_INPUTS_NAME = "<Python inputs>"

#: The option table (include/pt2diff/option_table.h, the CLI's flags): keyword -> (flag, commands, default, help).
_TABLE = {keyword: (flag, commands, default, help) for keyword, flag, commands, default, help in _pt2diff.options()}
#: Every keyword's default, for the options a function does not take (explain: the search's).
_DEFAULTS = {k: row[2] for k, row in _TABLE.items()}


def _options_doc() -> str:
    """The option table as the module's doc lists it: keyword, flag, help, default, and the functions taking it."""
    functions = ((_pt2diff.DIFF, "diff"), (_pt2diff.EXPLAIN, "explain"), (_pt2diff.SWEEP, "sweep"))
    import textwrap
    lines = []
    for keyword, (flag, commands, default, help) in _TABLE.items():
        taken = "/".join(name for bit, name in functions if commands & bit)
        lines.append(f"    {keyword:<26}{flag}  (default {default!r}; {taken})")
        lines += textwrap.wrap(help, 104, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "\n".join(lines) + "\n"


if __doc__:  # not under python -OO
    __doc__ += "\n" + _options_doc()


def _taken_by(command: int) -> dict[str, Any]:
    return {k: row[2] for k, row in _TABLE.items() if row[1] & command}


#: What each function takes: the table's keywords for its command, and what only Python has.
_PYTHON_ONLY = {"random_inputs": False, "progress": True}
_DIFF_OPTIONS = {**_taken_by(_pt2diff.DIFF), **_PYTHON_ONLY}
_EXPLAIN_OPTIONS = {**_taken_by(_pt2diff.EXPLAIN), **_PYTHON_ONLY}
_SWEEP_OPTIONS = {**_taken_by(_pt2diff.SWEEP), **_PYTHON_ONLY, "tol": "1e-7:1e-1:13", "multiplier": (), "localize": False}

def load(source, *, model: str | None = None, load_library=()) -> Program:
    """Loads a program: a path to a torch.export archive, the bytes of one, or a torch.export.ExportedProgram.

    An ExportedProgram is serialized with ``torch.export.save`` into memory (no file); its sample inputs
    come along. ``model`` picks ``models/<name>.json`` of an archive holding several; ``load_library``
    names custom-op libraries to load first (here and in the compiler's worker), like ``--load-library``.
    Raises :class:`BadArchiveError` with the CLI's line for anything that is not a readable archive.
    """
    libraries = [os.fspath(p) for p in ([load_library] if isinstance(load_library, (str, os.PathLike)) else load_library)]
    if isinstance(source, Program):
        return source
    if isinstance(source, torch.export.ExportedProgram):
        buffer = io.BytesIO()
        torch.export.save(source, buffer)
        return _pt2diff.load_bytes(buffer.getvalue(), EXPORTED_PROGRAM_NAME, model or "", libraries)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _pt2diff.load_bytes(bytes(source), "<bytes>", model or "", libraries)
    if isinstance(source, (str, os.PathLike)):
        return _pt2diff.load(os.fspath(source), model or "", libraries)
    if isinstance(source, torch.nn.Module):
        raise TypeError("pt2diff.load: an nn.Module needs inputs to be exported: pass it to pt2diff.diff(module, inputs), "
                        "or export it first (torch.export.export(module, args))")
    raise TypeError(f"pt2diff.load: expected a path, bytes or a torch.export.ExportedProgram, got {type(source).__name__}")


def _split(inputs) -> tuple[tuple, dict]:
    """inputs as torch.export.export takes them: (args, kwargs)."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        if len(inputs) == 2 and isinstance(inputs[0], (tuple, list)) and isinstance(inputs[1], dict):
            return tuple(inputs[0]), dict(inputs[1])
        return tuple(inputs), {}
    raise TypeError(f"inputs: expected a tensor, a tuple or list, a dict or (args, kwargs), got {type(inputs).__name__}")


def _program(source, inputs) -> Program:
    if isinstance(source, torch.nn.Module):
        if inputs is None:
            raise TypeError("an nn.Module is exported with its inputs: pass inputs")
        args, kwargs = _split(inputs)
        return load(torch.export.export(source, args, kwargs))
    return load(source)


def _input_names(source, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """(name, value) of the given inputs: forward()'s parameter names for an nn.Module's positional inputs, else
    "input #i"; keyword inputs by their key."""
    names = []
    if isinstance(source, torch.nn.Module):
        try:
            import inspect
            names = [n for n, p in inspect.signature(source.forward).parameters.items()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
    out = [(names[i] if i < len(names) else f"input #{i}", a) for i, a in enumerate(args)]
    return out + list(kwargs.items())


def _run_device(source, inputs, device):
    """The device of the runs: `device` when given; else the GPU the inputs (or an nn.Module's weights) are on;
    else None (the engine's default: where the graph was exported when this machine has it, else the CPU).
    Raises BadInputsError, naming the input, when the inputs and the module's weights are on different devices."""
    if inputs is None:
        tensors = []
    else:
        args, kwargs = _split(inputs)
        tensors = [(name, t) for name, value in _input_names(source, args, kwargs)
                   for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]
    weights = []
    if isinstance(source, torch.nn.Module):
        weights = sorted({str(w.device) for w in (*source.parameters(), *source.buffers())})
        if len(weights) > 1:
            raise BadInputsError(f"the module's weights are on {' and '.join(weights)}: move the whole module to one "
                                 f"device (model.to('{weights[-1]}'))")
        for name, t in tensors:
            if weights and str(t.device) != weights[0]:
                raise BadInputsError(f"input '{name}' is on {t.device} but the module's weights are on {weights[0]}: pass "
                                     f"inputs where the weights are ({name}.to('{weights[0]}'))")
    if device is not None:
        return device
    gpus = [str(t.device) for _, t in tensors if t.device.type == "cuda"] + [w for w in weights if w.startswith("cuda")]
    return gpus[0] if gpus else None


def _options(defaults: dict, given: dict, function: str) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"pt2diff.{function}() got unknown option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))} (options: {', '.join(sorted(defaults))})")
    # Options a command does not take (explain: the search) keep the CLI's defaults.
    o = {**_DEFAULTS, **defaults, **given}
    config = o["inductor_config"]
    if isinstance(config, dict):
        config = [f"{k}={v!r}" for k, v in config.items()]
    elif isinstance(config, str):
        config = [config]
    o["inductor_config"] = list(config)
    for key in ("worker_python", "inductor_cache", "repro"):
        if o.get(key) is not None:
            o[key] = os.fspath(o[key])
    o["progress"] = bool(o["progress"])
    o["inputs_origin"] = PYTHON_INPUTS_NAME
    return o


def diff(program, inputs=None, **options) -> DiffResult:
    """Runs the program three ways (compiled, eager, fp64) and compares, as ``pt2diff GRAPH INPUTS`` does.

    Returns a :class:`DiffResult` (``.verdict``, ``.outputs``, ``.culprit``, ``.hints``, ``.to_json()`` ...).
    A compiler that fails is recorded in it (``compiled_failed``), not raised. Options: see the module's doc.
    """
    o = _options(_DIFF_OPTIONS, options, "diff")
    o["device"] = _run_device(program, inputs, o["device"])
    p = _program(program, inputs)
    return DiffResult(_pt2diff.diff(p, inputs, o))


def diff_training_step(model, inputs, loss_fn=None, *, targets=(), **options) -> DiffResult:
    """One training step of ``model`` diffed as one graph: forward, loss and backward (docs/training.md).

    The loss is ``loss_fn(model(*inputs), *targets)`` (the model's output itself when ``loss_fn`` is None); the
    step's outputs are the loss, every parameter's gradient (``fc1.weight.grad``) and that of every input that
    requires grad (``x.grad``), each judged against fp64,
    and batch norm's running statistics are judged after the step. ``result.culprit_phase`` says whether the
    divergence starts in the forward or the backward; a backward node's ``source`` reads "gradient of NODE at
    model.py:41 ...". The model runs in the mode it is in (``model.train()`` first). Options: as :func:`diff`.
    The model's weights and buffers are left as they are.
    """
    try:
        from pt2diff_capture.training import training_program
    except ImportError as e:
        raise UnsupportedError("pt2diff.diff_training_step needs pt2diff_capture (the source tree's python/, which "
                               "scripts/setup.sh installs): put that directory on PYTHONPATH") from e
    args, kwargs = _split(inputs)
    program, leaves, _ = training_program(model, args, loss_fn, targets, kwargs)
    return diff(program, tuple(leaves), **options)


def diff_distributed(capture_dir, *, graphs=(), rank_local=True, process_backend="gloo", collective_timeout=300.0,
                     **options) -> DistResult:
    """A distributed program's capture judged rank by rank against one fp64 step, as ``pt2diff dist DIR`` does
    (docs/distributed.md).

    ``capture_dir`` holds ``rank_0`` ... ``rank_{N-1}`` as ``pt2diff_capture`` writes them under a process group
    (``python -m pt2diff_capture ranks --nproc N SCRIPT OUT``). Every rank's graphs run in lockstep in its own dtypes
    and in fp64, each collective computed from every rank's value (folded in group-rank order); the compiled side is N
    workers forming a ``process_backend`` group ("gloo" on the CPU, "nccl" on GPUs) whose collectives run for real;
    each rank's rank-local program (its collectives cut out and fed from the reference) is diffed as :func:`diff`
    diffs a graph (``rank_local=False`` skips that). ``graphs``: the graph ids to judge (default every one).
    Returns a :class:`DistResult` (``.agrees``, ``.culprits``, ``.graphs``, ``.to_text()``). Options: as :func:`diff`
    (compiler, rule, localization); a collective that waits more than ``collective_timeout`` seconds fails.
    """
    import glob

    first = sorted(glob.glob(os.path.join(os.fspath(capture_dir), "rank_0", "*.pt2")))
    if not first:
        raise UsageError(f"{capture_dir}: no rank_0/*.pt2: not a capture of every rank; capture the program under its "
                         "process group (python -m pt2diff_capture ranks --nproc N SCRIPT OUT, docs/distributed.md)")
    o = _options(_DIFF_OPTIONS, options, "diff_distributed")
    o["device"] = _run_device(first[0], None, o["device"])
    p = _program(first[0], None)
    json_text, text = _pt2diff.diff_distributed(p, os.fspath(capture_dir), [int(g) for g in graphs], bool(rank_local),
                                                process_backend, float(collective_timeout), o)
    return DistResult(json_text, text)


def explain(program, inputs=None, *, node: str, to: str | None = None, **options) -> Explanation:
    """The hint experiments on one node, or the window from ``node`` to ``to``, as ``pt2diff explain`` runs them.

    Takes the compiler, rule and input options of :func:`diff`. Returns an :class:`Explanation`.
    """
    o = _options(_EXPLAIN_OPTIONS, options, "explain")
    o["device"] = _run_device(program, inputs, o["device"])
    p = _program(program, inputs)
    hints_json, hints_text = _pt2diff.explain(p, inputs, node, to or "", o)
    what = f"node {node} alone" if not to else f"window {node} .. {to}"
    return Explanation(f"{p.path}: {what} on fp64-exact inputs, compiled = {o['compiled']}\n", hints_json, hints_text)


def sweep(program, inputs=None, **options) -> SweepResult:
    """One set of runs judged at every tolerance of a grid, as ``pt2diff sweep`` does.

    ``tol`` is the grid ("LO:HI:N", "A,B,C" or a list of numbers; default "1e-7:1e-1:13"), ``multiplier`` a
    list of RMSE multipliers (the second axis), ``localize=True`` localizes at every failing point.
    Takes the compiler, rule and input options of :func:`diff`, and ``exploded``.
    """
    o = _options(_SWEEP_OPTIONS, options, "sweep")
    o["device"] = _run_device(program, inputs, o["device"])
    tols = o.pop("tol")
    if not isinstance(tols, str):
        tols = ",".join(repr(float(t)) for t in tols)
    multipliers = [float(m) for m in o.pop("multiplier")]
    localize = bool(o.pop("localize"))
    # The rule's own tol is not used by a sweep's points; the engine keeps the CLI's rule defaults.
    o.update({"tol": _DEFAULTS["tol"], "localize": _DEFAULTS["localize"]})
    p = _program(program, inputs)
    return SweepResult(_pt2diff.sweep(p, inputs, tols, multipliers, localize, o))


def sweep_sizes(program, inputs=None, *, dims=(), static_check=True, **options) -> SizeSweepResult:
    """One dynamic compile judged at every size of the graph's dynamic dims, as ``pt2diff sizes`` does
    (docs/dynamic-shapes.md).

    ``dims`` maps a dim to its sizes (``{"s77": [1, 2, 7, 17]}`` or ``{"x.size(0)": range(2, 9)}``; an empty list takes
    the default sizes) or lists specs as the CLI's ``--dim`` takes them (``["s77=2,3,17"]``); empty: every dynamic dim
    at its default sizes. The given inputs are cut, or repeated cyclically, along the dim at each size. The smallest
    failing size is localized (``localize``), and with ``static_check`` the graph is compiled static too at one size
    and judged beside the dynamic compile. Takes the compiler, rule and input options of :func:`diff`. A size the
    graph cannot run (outside the exported range, over ``max_memory``) is refused in its row, the others judged.
    """
    if isinstance(dims, dict):
        specs = [f"{name}=" + ",".join(str(int(v)) for v in sizes) if len(sizes) else name for name, sizes in
                 ((n, list(s)) for n, s in dims.items())]
    else:
        specs = [str(d) for d in dims]
    o = _options(_DIFF_OPTIONS, options, "sweep_sizes")
    o["device"] = _run_device(program, inputs, o["device"])
    p = _program(program, inputs)
    return SizeSweepResult(_pt2diff.sweep_sizes(p, inputs, specs, bool(static_check), o))


def recheck(program, inputs=None, *, torches, bisect=False, any_version=False, change_factor=2.0, **options) -> RecheckResult:
    """The graph judged through the compilers of other torch installations, as ``pt2diff recheck`` does
    (docs/upstream.md): per torch the verdict, the culprit and the compiled local error at it, all against one fp64
    reference; between adjacent torches whose verdicts differ, the nodes whose compiled local error changed.

    ``torches`` lists the Pythons of torch installations, oldest first: ``["/venvs/t213/bin/python", "nightly=/opt/n/bin/python"]``
    (``LABEL=PYTHON`` or ``PYTHON``), or a dict ``{label: python}``. ``bisect`` runs only what a bisection needs to name
    the first bad torch (the first must pass, the last fail). A torch outside 2.11-2.14 is refused in its row unless
    ``any_version``. Takes the compiler, rule and input options of :func:`diff` (the compiled side must be ``inductor``
    or ``aoti:...``: a compiler in each torch's worker). A torch that cannot judge (no torch, an unsupported version, an
    archive it cannot load) is a row with its ``problem``; the others still run.
    """
    if isinstance(torches, dict):
        specs = [f"{label}={python}" for label, python in torches.items()]
    elif isinstance(torches, (str, bytes)):
        raise TypeError("recheck: torches is a list of Pythons (or LABEL=PYTHON), not one string")
    else:
        specs = [str(t) for t in torches]
    o = _options(_DIFF_OPTIONS, options, "recheck")
    o["device"] = _run_device(program, inputs, o["device"])
    p = _program(program, inputs)
    return RecheckResult(_pt2diff.recheck(p, inputs, specs, bool(bisect), bool(any_version), float(change_factor), o))


def cli_flags(program, inputs=None, **options) -> list[str]:
    """The flags after ``pt2diff GRAPH INPUTS`` that run the CLI with these options (options.h: to_flags)."""
    o = _options(_DIFF_OPTIONS, options, "cli_flags")
    o["device"] = _run_device(program, inputs, o["device"])
    return _pt2diff.cli_flags(_program(program, inputs), o)
