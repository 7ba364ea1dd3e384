"""Inputs as pt2diff's C++ loader reads them.

The loader reads a torch.save file with libtorch's unpickler, which builds tensors, tuples, lists,
str-keyed dicts, int/float/bool/str and None, and nothing else (docs/usage.md). So an inputs file holds
plain CPU tensors, detached, and plain containers: torch.Size and namedtuples become tuples,
OrderedDicts become dicts. Tensors whose dtype the unpickler cannot read (float8, uint16/32/64,
complex32, bits*: torch's `_rebuild_tensor_v3` dtypes) travel as a same-size integer bitcast; the
archive then takes that integer tensor and bitcasts it back with `aten.view.dtype` as its first op
(export.py does that), so the numbers are bit-exact.
"""
import torch
import torch.utils._pytree as pytree


class CaptureError(Exception):
    """A problem the user has to fix; str() is the one line to show."""


SCALARS = (bool, int, float, str, type(None))
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def one_line(e):
    """`Type: first line of the message`, short enough for a log line."""
    text = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    text = text if len(text) <= 300 else text[:297] + "..."
    if isinstance(e, CaptureError):  # already says what it is
        return text
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def wire_dtype(dtype):
    """The dtype a tensor is saved as: its own, or a same-size integer one the unpickler can read."""
    if dtype not in torch.storage._new_dtypes():
        return dtype
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]


def _tensor(t, where):
    if type(t) not in PLAIN_TENSORS:
        raise CaptureError(f"{where} is a {type(t).__name__} (a tensor subclass): pt2diff reads plain tensors; "
                           "pass the plain tensor it wraps")
    if t.layout != torch.strided:
        raise CaptureError(f"{where} is a {t.layout} tensor: pt2diff reads strided tensors; pass t.to_dense()")
    if t.device.type == "meta":
        raise CaptureError(f"{where} is on the meta device (it has no data): pass a real tensor")
    t = t.detach().resolve_conj().resolve_neg().cpu()
    wire = wire_dtype(t.dtype)
    return t if wire == t.dtype else t.view(wire)


def normalize(value, where="input"):
    """`value` with every container and tensor in a form libtorch's unpickler reads."""
    if isinstance(value, torch.Tensor):
        return _tensor(value, where)
    if isinstance(value, torch.Size):
        return tuple(int(s) for s in value)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise CaptureError(f"{where} is a symbolic {type(value).__name__}: pass the concrete value")
    if isinstance(value, tuple):  # namedtuples too
        return tuple(normalize(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, list):
        return [normalize(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):  # OrderedDict, defaultdict, ...
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise CaptureError(f"{where} is a dict with a {type(bad[0]).__name__} key ({bad[0]!r}): "
                               "pt2diff reads str-keyed dicts")
        return {k: normalize(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, SCALARS):
        return value
    raise CaptureError(f"{where} is a {type(value).__qualname__}: pt2diff inputs hold tensors, numbers, str and None "
                       "(in tuples, lists and str-keyed dicts)")


def flat_leaves(args, kwargs):
    """The leaves of (args, kwargs) in the order torch.export numbers a program's user inputs."""
    return pytree.tree_leaves((tuple(args), dict(kwargs or {})))


def bitcasts(leaves):
    """{leaf index: dtype} for the tensors that travel as an integer bitcast."""
    return {i: v.dtype for i, v in enumerate(leaves)
            if isinstance(v, torch.Tensor) and wire_dtype(v.dtype) != v.dtype}


def file_values(leaves, names):
    """The values an inputs file holds for these flat leaves (one per graph input).

    A tensor that uses less than half of its storage (a slice of a larger buffer) and shares it with
    no other input is saved compact: torch.save writes whole storages. Inputs sharing a storage stay
    views of it, as pt2diff's loader rebuilds them."""
    values = [normalize(v, f"input '{n}'") for v, n in zip(leaves, names)]
    owners = {}
    for v in values:
        if isinstance(v, torch.Tensor) and v.numel():
            key = v.untyped_storage().data_ptr()
            owners[key] = owners.get(key, 0) + 1
    for i, v in enumerate(values):
        if isinstance(v, torch.Tensor) and v.numel() and owners[v.untyped_storage().data_ptr()] == 1 \
                and v.untyped_storage().nbytes() > 2 * v.numel() * v.element_size():
            values[i] = v.clone(memory_format=torch.contiguous_format)
    return values


def describe(value, name):
    """What the index and the export result say about one input."""
    if isinstance(value, torch.Tensor):
        d = {"name": name, "dtype": dtype_name(value.dtype), "shape": list(value.shape)}
        if wire_dtype(value.dtype) != value.dtype:
            d["saved_as"] = dtype_name(wire_dtype(value.dtype))
        return d
    if isinstance(value, SCALARS):
        return {"name": name, "value": value}
    return {"name": name, "value": repr(value)}


def save(obj, path):
    """torch.save of `obj` normalized for pt2diff (containers and tensors as the loader reads them)."""
    torch.save(normalize(obj, "inputs"), path)
