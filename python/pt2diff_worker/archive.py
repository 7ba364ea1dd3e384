"""An archive as a worker holds it: the loaded torch.export program, its nodes by name, its weights on
the target device, and the region inputs the engine sends (torch.save files, read with weights_only=True).
"""
import contextlib
import operator

import torch

from .protocol import Failure, first_line
from .regions import attention_on_cpu, graphs_on_device, inline_autocast, region_module


@contextlib.contextmanager
def tolerant_output_pytrees():
    """While it runs, torch.export.load accepts an output container whose Python class is not importable
    here (transformers' BaseModelOutput, ...), reading it as a leaf: a worker never calls the program
    with its user-facing pytrees, so that must not stop a load."""
    from torch._export.serde import serialize as serde
    from torch.utils import _pytree
    original = serde.treespec_loads

    def tolerant(text):
        try:
            return original(text)
        except Exception:  # noqa: BLE001
            return _pytree.LeafSpec()

    serde.treespec_loads = tolerant
    try:
        yield
    finally:
        serde.treespec_loads = original


@contextlib.contextmanager
def loading_on_cpu():
    """torch.export.load with every storage mapped to the CPU, so a GPU export compiles for the CPU on a
    machine without CUDA. torch.export.load has no map_location (torch 2.13): the two places it picks a
    device, the weights' recorded device and torch.load's, are redirected while it runs."""
    from torch.export.pt2_archive import _package
    real_load, real_device = torch.load, getattr(_package, "deserialize_device", None)

    def load(*args, **kwargs):
        kwargs.setdefault("map_location", "cpu")
        return real_load(*args, **kwargs)

    def device(serialized):
        d = real_device(serialized)
        return torch.device("cpu") if d.type not in ("cpu", "meta") else d

    torch.load = load
    if real_device is not None:
        _package.deserialize_device = device
    try:
        yield
    finally:
        torch.load = real_load
        if real_device is not None:
            _package.deserialize_device = real_device


def load_op_libraries(libraries):
    """Loads shared libraries registering custom ops (`--load-library`) with torch.ops.load_library,
    before the archive that calls them is read. Failure "load_failed" names the first that fails."""
    for library in libraries:
        try:
            torch.ops.load_library(library)
        except Exception as e:  # noqa: BLE001
            raise Failure("load_failed", f"--load-library {library}: {type(e).__name__}: {first_line(str(e))}")


def resolve_device(device):
    """The device a load asked for, as tensors report it: "cuda" becomes the current CUDA device
    ("cuda:0"), for device asserts. Failure "load_failed" when it is a CUDA device this torch cannot see."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise Failure("load_failed", f"--device {device}: this worker's torch {torch.__version__} sees no CUDA device: "
                                     "run pt2diff on the GPU machine, or pass --device cpu to compile for the CPU "
                                     "(a graph exported on a GPU compiles there too)")
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    return device


def program_state(program, device):
    """Placeholder name -> value of every weight the program reads (parameters, buffers, tensor
    constants), tensors moved to `device`."""
    state = {}
    for spec in program.graph_signature.input_specs:
        if spec.target is None:
            continue
        if spec.target in program.state_dict:
            state[spec.arg.name] = program.state_dict[spec.target]
        elif spec.target in program.constants:
            state[spec.arg.name] = program.constants[spec.target]
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in state.items()}


def export_device_type(program):
    """The device type the program was exported on, from its placeholders' example values ("cpu" if none)."""
    for n in program.graph.nodes:
        val = n.meta.get("val") if n.op == "placeholder" else None
        if isinstance(val, torch.Tensor):
            return val.device.type
    return "cpu"


class Archive:
    """A torch.export archive loaded for compiling regions of it on one device.

    `program`: the ExportedProgram; `by_name`: value or node name -> fx node of its graph (fused
    attention rewritten for the CPU stays under its old name); `state`: placeholder name -> weight, on
    `device`; `device`: "cpu", "cuda:N", ..."""

    def __init__(self, program, by_name, state, device, inlined=None):
        self.program = program
        self.by_name = by_name
        self.state = state
        self.device = device
        self.inlined = inlined or {}  # region -> the engine's names of the ops inlined from it (inline_autocast)

    @classmethod
    def load(cls, path, device="cpu", op_libraries=(), cuda_fused_attention=(), inline=None):
        """Loads the archive at `path` for `device`, after the custom-op libraries `op_libraries`.
        Compiling a GPU export for the CPU: storages are mapped to the CPU and the CUDA-only fused attention
        ops named in `cuda_fused_attention` (schema names) become math attention. `inline`: the
        top-level autocast regions to inline as the engine inlined them into the graph it localizes in (the
        load request's inline_autocast: regions.inline_autocast); `inlined` then holds what was built. Failures: "load_failed"."""
        load_op_libraries(op_libraries)
        device = resolve_device(device)
        on_cpu = torch.device(device).type == "cpu"
        try:
            with loading_on_cpu() if on_cpu else contextlib.nullcontext(), tolerant_output_pytrees():
                program = torch.export.load(path)
        except Exception as e:  # noqa: BLE001 - any loader error is the archive's problem
            raise Failure("load_failed", f"torch.export.load({path}) failed: {type(e).__name__}: {e}")
        gm = program.graph_module
        # Devices baked into the bodies of higher-order ops (a torch.autocast region's factories) and regions'
        # autocast device types follow the compile, as the top level's do in region_module.
        graphs_on_device(gm, device, export_device_type(program))
        by_name = {n.name: n for n in gm.graph.nodes}
        if on_cpu:
            # The engine names the CUDA-only fused attention ops (its op catalog is the one list of them).
            by_name.update(attention_on_cpu(gm.graph, set(cuda_fused_attention)))
        inlined = {}
        if inline:
            aliases, inlined = inline_autocast(gm, inline)
            alive = set(gm.graph.nodes)
            by_name = {k: v for k, v in by_name.items() if v in alive}
            by_name.update(aliases)
            by_name.update({n.name: n for n in gm.graph.nodes})
        return cls(program, by_name, program_state(program, device), device, inlined)

    @classmethod
    def from_request(cls, req):
        """`Archive.load` with the fields of a protocol `load` request (archive, device, op_libraries,
        cuda_fused_attention, inline_autocast)."""
        return cls.load(req["archive"], req.get("device", "cpu"), req.get("op_libraries", []),
                        req.get("cuda_fused_attention", []), req.get("inline_autocast"))

    def node_count(self):
        """The number of op nodes (call_function, getitem aside): the `nodes` of a `load` reply."""
        return sum(1 for n in self.program.graph_module.graph.nodes
                   if n.op == "call_function" and n.target is not operator.getitem)

    def region_module(self, node_names, input_names, output_names, exploded=False, eager=()):
        """`regions.region_module` on this archive's graph, baked devices rewritten to this device."""
        return region_module(self.program.graph_module, self.by_name, node_names, input_names, output_names,
                             exploded, self.device, eager)

    def region_inputs(self, path, input_names, written=()):
        """The values for `input_names`, in order, on this device: from the engine's inputs file `path`
        (a torch.save tuple of (name, value) pairs, read with weights_only=True), else the archive's
        weights; a weight named in `written` (the region writes it in place: written_inputs) is a copy, so
        that no call changes the archive's. Failure "bad_request" when the file is unreadable or a value is
        missing."""
        try:
            sent = dict(torch.load(path, weights_only=True))  # a tuple of (name, value) pairs
        except Exception as e:  # noqa: BLE001
            raise Failure("bad_request", f"cannot read inputs {path}: {first_line(str(e))}", str(e))
        values = []
        for name in input_names:
            if name in sent:
                v = sent[name]
            elif name in self.state:
                v = self.state[name].clone() if name in written else self.state[name]
            else:
                raise Failure("bad_request", f"no value for region input '{name}'")
            values.append(v.to(self.device) if isinstance(v, torch.Tensor) else v)
        return values
