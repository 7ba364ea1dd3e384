"""The kernel map: every buffer the Inductor-compiled code materializes, seen right after the kernel that
wrote it, named by the exported node it computes (torch 2.11-2.14, Python wrapper, CPU and CUDA).

Inductor's own intermediate hooks (`config.generate_intermediate_hooks`) fire only after Triton
pointwise/reduction kernels and ExternKernelAlloc calls: never after C++ kernels, `extern_kernels.mm(out=)`
or fallbacks, so on the CPU they see nothing. Here each device's Python wrapper codegen is wrapped (the
registry out-of-tree backends use) to emit `run_intermediate_hooks(<json>, bufN)` after every kernel call,
for each buffer it writes. The JSON is fixed at codegen: the kernel, its call key (`<kernel>:<debug handle>`
from provenance tracking, level 2), the buffer, the exported node the buffer stands for, and the exported
nodes fused into the kernel.

Exported names travel in `node.meta["custom"]["pt2diff_node"]`, which regions.region_module sets and
Dynamo, AOTAutograd and pattern replacements copy onto every node they make from it (node *names* do not
survive: Dynamo and AOTAutograd rename). A training step's backward nodes are named by the archive's backward
nodes instead, on the joint graph before the partition (BackwardNames). A no-op `CustomGraphPass`
(`marker_class()`, wrapping any pass already configured) keys Inductor's caches on the instrumentation and the
region's names, and is the switch: the wrapper emits hooks only while a Marker is the post-grad pass, so plain
compiles are unchanged.
Design and measurements: docs/kernel-map.md.
"""
import ast
import contextlib
import dataclasses
import hashlib
import json
import os
import sys

import torch

# torch._inductor is imported by the functions that need it, not here: importing it reads (and may set)
# TORCHINDUCTOR_CACHE_DIR, which the worker's cli sets first (importing this module has no side effects).

#: The meta["custom"] key carrying an exported node's name through Dynamo, AOTAutograd and Inductor.
TAG = "pt2diff_node"
#: Version of the payload; part of the cache key, so entries of an older payload are not reused.
SCHEMA = 1
#: Ops a same-tag user may be and the buffer still is the node's value (the value only reshaped).
VIEWS = {"view", "reshape", "_unsafe_view", "squeeze", "unsqueeze", "permute", "t", "transpose", "expand", "alias",
         "clone"}
#: The meta key of a node's value mark: the exported node its value is, or None for an internal step (set on a training
#: step's joint graph, BackwardNames; stands_for reads it before looking at the node's users).
VALUE = "pt2diff_value"
#: Casts a post-grad pass may insert without a tag: they stand for the value they cast.
CASTS = {"convert_element_type", "_to_copy", "to"}


_marker = None


def marker_class():
    """Marker: the post-grad pass while the kernel map is on. It runs `inner` (a pass already configured,
    e.g. a test's planted bug) and keys the FX-graph and AOTAutograd caches on the region's exported names.
    Made on first use (it subclasses Inductor's CustomGraphPass)."""
    global _marker
    if _marker is None:
        from torch._inductor.custom_graph_pass import CustomGraphPass

        class Marker(CustomGraphPass):
            def __init__(self, names, inner=None):
                self.inner = inner
                inner_key = inner.uuid() if inner is not None and hasattr(inner, "uuid") else repr(inner)
                digest = hashlib.sha256("\0".join([str(inner_key), *names]).encode()).hexdigest()
                self.key = f"pt2diff-kernel-map-{SCHEMA}:{digest}"

            def __call__(self, graph):
                if self.inner is not None:
                    self.inner(graph)

            def uuid(self):
                return self.key

        _marker = Marker
    return _marker


def _shapes(val):
    """The shapes of a node's example value: one per tensor it returns."""
    vals = val if isinstance(val, (list, tuple)) else [val]
    return [tuple(v.shape) for v in vals if isinstance(v, torch.Tensor)]


class BackwardNames:
    """Names the nodes of a training step's joint graph (AOTAutograd's forward and backward, before the partition)
    by the archive's nodes, and marks the node whose value each archive node is.

    AOTAutograd gives every backward node the `custom` metadata of the forward node it derives from (by autograd's
    sequence number): the backward would carry forward names. The archive (pt2diff_capture.training) holds each
    backward op as its own node, its forward node in `custom["backward_of"]`. A backward node tagged with forward
    node F whose `original_aten` (the op it was decomposed from) is that of a backward node of F gets that node's
    name, the one whose value has its shape where F has several of that op (a linear's two mm: the input's and the
    weight's gradient); any other backward node loses its tag (its buffer is judged against no node rather than the
    wrong one). The value marks (stands_for, on the whole joint graph) survive the partition: in the forward graph
    alone a decomposition's step saved for the backward has no user of its own and would pass for the value."""

    def __init__(self, program):
        self.backward = {}  # forward name -> [(backward node name, its op, its shapes)]
        for n in program.graph.nodes:
            of = (n.meta.get("custom") or {}).get("backward_of") if n.op == "call_function" else None
            if of:
                self.backward.setdefault(of, []).append((n.name, str(n.target), _shapes(n.meta.get("val"))))
        listing = sorted(f"{f}>{name}" for f, nodes in self.backward.items() for name, _, _ in nodes)
        self.key = hashlib.sha256("\0".join(listing).encode()).hexdigest()

    def name(self, n):
        """The archive's backward node that joint-graph backward node `n` computes, or None."""
        forward = (n.meta.get("custom") or {}).get(TAG)
        op = n.meta.get("original_aten")
        if forward is None or op is None:
            return None
        op = str(op)  # "aten.mm.default": the archive's ops are not the same objects as Inductor's
        same_op = [(name, shapes) for name, target, shapes in self.backward.get(forward, []) if target == op]
        if len(same_op) > 1:
            shapes = _shapes(n.meta.get("val"))
            same_op = [(name, s) for name, s in same_op if shapes and shapes[0] in s]
        return same_op[0][0] if len(same_op) == 1 else None

    def __call__(self, graph):
        """On the joint graph: the backward nodes renamed, then every tagged node's value mark (VALUE)."""
        for n in graph.nodes:
            custom = n.meta.get("custom")
            if n.op != "call_function" or not custom or TAG not in custom or n.meta.get("partitioner_tag") != "is_backward":
                continue
            name = self.name(n)
            n.meta["custom"] = {**custom, TAG: name} if name is not None else {k: v for k, v in custom.items() if k != TAG}
        for n in graph.nodes:
            if n.op == "call_function" and tag(n) is not None:
                n.meta[VALUE] = stands_for(n)


_joint = None


def joint_class():
    """Joint: the joint-graph pass of an observed training step's compile, running `inner` (a pass already
    configured) then BackwardNames; it keys Inductor's caches on the archive's backward nodes."""
    global _joint
    if _joint is None:
        from torch._inductor.custom_graph_pass import CustomGraphPass

        class Joint(CustomGraphPass):
            def __init__(self, names, inner=None):
                self.names, self.inner = names, inner
                inner_key = inner.uuid() if inner is not None and hasattr(inner, "uuid") else repr(inner)
                self.key = f"pt2diff-kernel-map-joint-{SCHEMA}:{names.key}:{inner_key}"

            def __call__(self, graph):
                if self.inner is not None:
                    self.inner(graph)
                self.names(graph)

            def uuid(self):
                return self.key

        _joint = Joint
    return _joint


def active():
    """Whether the compile being generated asked for the kernel map."""
    from torch._inductor import config as inductor_config
    return isinstance(inductor_config.post_grad_custom_post_pass, marker_class())


def op_name(n):
    return getattr(getattr(n.target, "overloadpacket", None), "__name__", getattr(n.target, "__name__", str(n.target)))


def tag(n):
    """The exported node a post-grad fx node came from, or None. An untagged cast (inserted by a pass)
    stands for the value it casts."""
    if n is None:
        return None
    t = (n.meta.get("custom") or {}).get(TAG)
    if t is None and n.op == "call_function" and op_name(n) in CASTS and n.args and isinstance(n.args[0], torch.fx.Node):
        return tag(n.args[0])
    return t


def stands_for(n):
    """The exported node whose value this post-grad node's buffer is; None when it is an internal step of
    that node's decomposition (a same-tag user that is not a view keeps computing it). A node marked on the joint
    graph (VALUE) is what the mark says."""
    if n is not None and VALUE in n.meta:
        return n.meta[VALUE]
    x = tag(n)
    if x is None:
        return None
    seen = [n]
    while seen:
        m = seen.pop()
        for u in m.users:
            if u.op != "call_function" or tag(u) != x or op_name(u) in CASTS:
                continue
            if op_name(u) not in VIEWS:
                return None
            seen.append(u)
    return x


def provenance_key(kernel):
    from torch._inductor import debug
    return f"{kernel}:{getattr(debug, '_inductor_kernel_provenance_debug_handle', 0)}"


def kernel_nodes(key):
    """The exported nodes of the post-grad nodes provenance tracking put in the kernel call `key`."""
    from torch._inductor import debug
    from torch._inductor.virtualized import V
    names = getattr(debug, "_inductor_triton_kernel_to_post_grad_node_info", {}).get(key)
    if not names:
        return []
    by = {n.name: n for n in V.graph.graph.nodes}
    return sorted({tag(by[m]) for m in names if m in by and tag(by[m]) is not None})


def written(call_args, kw):
    """The buffer arguments a kernel call writes: C++ kernels' non-const pointers, Triton's in_out_ptr /
    out_ptr; when neither is known, every buffer argument (inputs then re-observed, harmlessly)."""
    names = [a for a in call_args if isinstance(a, str)]
    arg_types = kw.get("arg_types")
    if not kw.get("triton", True) and arg_types is not None and len(arg_types) == len(call_args):
        return [a for a, t in zip(call_args, arg_types)
                if isinstance(a, str) and isinstance(t, str) and t.endswith("*") and not t.startswith("const")]
    signature = (kw.get("triton_meta") or {}).get("signature")
    if kw.get("triton", True) and signature is not None and len(signature) >= len(call_args):
        return [a for k, a in zip(list(signature), call_args) if isinstance(a, str) and k.startswith(("in_out_ptr", "out_ptr"))]
    return names


class ObserveMixin:
    """Mixed into a device's Python wrapper codegen: a hook line after every kernel call, per buffer written."""

    def _observe(self, kernel, buf_name, index=None, key=None):
        if not active():
            return
        try:
            from torch._inductor.virtualized import V
            buf = V.graph.try_get_buffer(buf_name)
            if buf is None or buf_name in V.graph.graph_inputs:
                return
            origin = buf.get_origin_node()
            key = key or provenance_key(kernel)
            info = {"kernel": kernel, "call": key, "buffer": buf_name, "node": stands_for(origin),
                    "part_of": tag(origin), "index": index, "kernel_nodes": kernel_nodes(key)}
        except Exception:  # noqa: BLE001 - instrumentation never fails a compile: the buffer goes unobserved
            return
        self._emit(info, buf_name)

    def _emit(self, info, buf_name):
        """The line that hands `buf_name` to the observer at run time (Python wrapper: a hook call)."""
        self.writeline(f"run_intermediate_hooks({json.dumps(info)!r}, {buf_name})")

    def generate_kernel_call(self, kernel_name, call_args, **kw):
        super().generate_kernel_call(kernel_name, call_args, **kw)
        for a in written(call_args, kw):
            self._observe(kernel_name, a)

    def generate_extern_kernel_out(self, node, *args, **kw):
        super().generate_extern_kernel_out(node, *args, **kw)
        self._observe(kernel_name_of(node), node.get_name())

    def generate_extern_kernel_alloc(self, node, *args, **kw):
        super().generate_extern_kernel_alloc(node, *args, **kw)
        self._observe(kernel_name_of(node), node.get_name())

    def generate_fallback_kernel(self, node, *args, **kw):
        super().generate_fallback_kernel(node, *args, **kw)
        self._fallback_keys()[node.get_name()] = (kernel_name_of(node), provenance_key(kernel_name_of(node)))
        self._observe(kernel_name_of(node), node.get_name())

    def codegen_multi_output(self, node, *args, **kw):
        super().codegen_multi_output(node, *args, **kw)
        parent = node.inputs[0].get_name() if node.inputs else ""
        kernel, key = self._fallback_keys().get(parent, ("multi_output:" + parent, None))
        indices = [i[1] if isinstance(i, tuple) else i for i in getattr(node, "indices", ())]
        self._observe(kernel, node.get_name(), index=indices[0] if len(indices) == 1 else None, key=key)

    def _fallback_keys(self):
        if not hasattr(self, "_pt2diff_fallbacks"):
            self._pt2diff_fallbacks = {}
        return self._pt2diff_fallbacks


#: The AOTI compile being recorded (recording_aoti): the payload of each save line, by its number.
_aoti_payloads = None
#: ... and each kernel's source as its codegen defined it, by kernel name (C++ or Triton).
_aoti_code = None
#: The tensor name AOTI's save lines carry: this prefix and the payload's number (no underscore: AOTI
#: joins the parts of a saved file's name with underscores).
AOTI_TENSOR_PREFIX = "pt2diffobs"


class CppObserveMixin(ObserveMixin):
    """Mixed into a device's C++ wrapper codegen (AOTInductor): after every kernel call, per buffer written,
    `aoti_torch_save_tensor_handle`, the shim function AOTI's own intermediate value printer calls
    (`aot_inductor.debug_intermediate_value_printer=1`): it writes the buffer to a .pt file under the
    current directory at once. The payload stays on the Python side (recording_aoti), numbered by line."""

    def define_kernel(self, kernel_name, kernel_body, metadata=None, gpu=True, cpp_definition=None):
        """Inductor's own definition of a kernel, kept for the kernel table's code (a package holds only its
        compiled form): a C++ kernel's whole source, or a Triton kernel's. (Inductor's `cpp_definition` is the
        C++ kernel's declaration only; `kernel_body` holds its code.)"""
        if _aoti_code is not None:
            _aoti_code[kernel_name] = kernel_source(kernel_body)
        return super().define_kernel(kernel_name, kernel_body, metadata=metadata, gpu=gpu, cpp_definition=cpp_definition)

    def _emit(self, info, buf_name):
        if _aoti_payloads is None or not self._is_tensor_in_cpp(buf_name):
            return
        number = len(_aoti_payloads)
        _aoti_payloads.append(info)
        self.writeline(f'aoti_torch_save_tensor_handle({buf_name}, "{AOTI_TENSOR_PREFIX}{number}", "after_launch", "pt2diff");')


    @staticmethod
    def _is_tensor_in_cpp(buf_name):
        """Whether the C++ wrapper declares `buf_name` as a tensor: a multi-output fallback's own node
        (MultiOutputLayout) is a tuple in the Python wrapper and nothing in C++ (its parts are observed)."""
        from torch._inductor.virtualized import V
        buf = V.graph.try_get_buffer(buf_name)
        layout = getattr(buf, "layout", None)
        return type(layout).__name__ not in ("MultiOutputLayout", "NoneLayout")


def kernel_source(body):
    """A kernel's source from its definition: the longest string argument of `async_compile.<kind>(NAME,
    SOURCE, ...)` (how Triton kernels are defined), else the text itself (a C++ kernel's definition)."""
    try:
        call = ast.parse(body.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return body
    text = _longest_string_argument(call) if isinstance(call, ast.Call) else None
    return body if text is None else text


def _longest_string_argument(call):
    """The longest string literal among an ast.Call's positional arguments (a kernel's source), or None."""
    texts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return max(texts, key=len) if texts else None


@contextlib.contextmanager
def recording_aoti():
    """While an AOTI compile is generated inside the block: yields (payloads, code), filled as it is
    generated: the payload of each save line in a list (payload k is the buffer saved as `pt2diffobs<k>`),
    and each kernel's source by name."""
    global _aoti_payloads, _aoti_code
    _aoti_payloads, _aoti_code = [], {}
    try:
        yield _aoti_payloads, _aoti_code
    finally:
        _aoti_payloads, _aoti_code = None, None


def aoti_saved(directory, payloads):
    """[(payload, tensor)] for each buffer an instrumented AOTI package saved under `directory` in one run,
    in the order the code wrote them. The files are AOTI's own (`torch::pickle_save` of one tensor: read
    with weights_only=True); their names end `_pt2diffobs<k>_<device>.pt`."""
    import re
    found = {}
    pattern = re.compile(r"_" + AOTI_TENSOR_PREFIX + r"(\d+)_[^_]*\.pt$")
    for root, _, files in os.walk(directory):
        for f in files:
            m = pattern.search(f)
            if m and int(m.group(1)) < len(payloads):
                found[int(m.group(1))] = os.path.join(root, f)
    out = []
    for k in sorted(found):
        value = torch.load(found[k], map_location="cpu", weights_only=True)
        if isinstance(value, torch.Tensor):
            out.append((payloads[k], value))
    return out


def kernel_name_of(node):
    for attr in ("get_kernel_name", "python_kernel_name", "op_overload"):
        v = getattr(node, attr, None)
        v = v() if callable(v) and attr == "get_kernel_name" else v
        if v:
            return str(v)
    return type(node).__name__


_installed = False


def _observed_class(base, mixin):
    observed = type("Observed" + base.__name__, (mixin, base), {})

    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None, base=base, observed=observed):
        if is_subgraph:  # subgraphs (cond, while_loop bodies) keep the stock wrapper: no hooks there
            return base.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)
        return observed()

    observed.create = staticmethod(create)
    return observed


def install():
    """Once per process: every registered device's Python wrapper codegen gets ObserveMixin and its C++
    wrapper codegen (AOTInductor) CppObserveMixin, both inert unless a Marker is the post-grad pass.
    Returns why the map is unavailable, or "" when installed."""
    global _installed
    if _installed:
        return ""
    try:
        from torch._inductor.codegen import common
        common.init_backend_registration()
        for device, c in list(common.device_codegens.items()):
            changes = {}
            if isinstance(c.wrapper_codegen, type):
                changes["wrapper_codegen"] = _observed_class(c.wrapper_codegen, ObserveMixin)
            if isinstance(getattr(c, "cpp_wrapper_codegen", None), type):
                changes["cpp_wrapper_codegen"] = _observed_class(c.cpp_wrapper_codegen, CppObserveMixin)
            if changes:
                common.device_codegens[device] = dataclasses.replace(c, **changes)
    except Exception as e:  # noqa: BLE001 - a torch whose internals moved: say so, compile without the map
        return f"this torch's Inductor codegen cannot be instrumented ({type(e).__name__}: {e})"
    _installed = True
    return ""


def unavailable(config, aoti=False):
    """Why a compile under Inductor `config` (the request's overrides) cannot give the map, or "".
    `aoti`: an AOTInductor compile (a C++ wrapper, observed through AOTI's save function)."""
    from torch._inductor import config as inductor_config
    if aoti:
        return install()
    if config.get("cpp_wrapper", inductor_config.cpp_wrapper):
        return "cpp_wrapper compiles the wrapper to C++, where no Python hook runs"
    if config.get("triton.cudagraphs", inductor_config.triton.cudagraphs):
        return "CUDA graphs replay kernels without running the wrapper's Python"
    return install()


def patch(names, backward=None):
    """The Inductor config the observed compile runs under: provenance tracking at its basic level (the
    kernel → node table) and the Marker, wrapping whatever post-grad pass is configured. `backward` (BackwardNames):
    a training step's: its joint graph's nodes named by the archive's nodes (the Joint pass)."""
    from torch._inductor import config as inductor_config
    level = getattr(inductor_config.trace, "provenance_tracking_level", 0) or 2
    changes = {"trace.provenance_tracking_level": level,
               "post_grad_custom_post_pass": marker_class()(names, inductor_config.post_grad_custom_post_pass)}
    if backward is not None:
        changes["joint_custom_post_pass"] = joint_class()(backward, inductor_config.joint_custom_post_pass)
    return inductor_config.patch(changes)


@contextlib.contextmanager
def observing(keep, wrappers=None):
    """Calls `keep(info_dict, tensor)` for every hook the compiled code runs inside the block; adds to the
    set `wrappers` the file of each generated wrapper module that ran them (kernel_code reads it)."""
    from torch._inductor import hooks
    ours = {os.path.abspath(hooks.__file__), os.path.abspath(__file__)}

    def hook(name, value):
        try:
            info = json.loads(name)
        except (TypeError, ValueError):  # Inductor's own hooks (bare node names): not ours
            return
        if wrappers is not None:
            f = sys._getframe(1)
            while f is not None and os.path.abspath(f.f_code.co_filename) in ours:
                f = f.f_back
            if f is not None:
                wrappers.add(f.f_code.co_filename)
        if isinstance(value, torch.Tensor):
            keep(info, value)

    with hooks.intermediate_hook(hook):
        yield


def kernel_code(paths, names):
    """Each kernel of `names` defined in the generated wrapper modules at `paths`, its source as Inductor
    wrote it: the longest string argument of `name = async_compile.<kind>(...)` (cpp_pybinding's C++,
    triton's Triton). Extern kernels have no definition and are absent. Works on a cache hit too: the
    wrapper read is the one that ran."""
    code = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            continue
        for stmt in tree.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id in names and isinstance(stmt.value, ast.Call)):
                continue
            text = _longest_string_argument(stmt.value)
            if text is not None:
                code[stmt.targets[0].id] = text
    return code
