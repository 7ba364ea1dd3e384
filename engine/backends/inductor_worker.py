#!/usr/bin/env python3
"""pt2diff's Inductor worker: compiles regions of a torch.export archive with Inductor and runs them.

Glue only. It speaks the worker protocol (docs/worker-protocol.md): one JSON request per line on stdin,
one JSON reply per line on stdout. Tensors travel as torch.save files in a directory the engine owns;
they are loaded with weights_only=True. Anything the worker prints for humans goes to stderr.

    python inductor_worker.py [--cache-dir DIR]
"""
import argparse
import ast
import contextlib
import json
import os
import sys
import time
import traceback

PROTOCOL = 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/pt2diff/inductor"),
                   help="Inductor's cache directory (FX graph cache and kernel code)")
    return p.parse_args()


ARGS = parse_args()
# Before torch is imported: Inductor reads its cache location once. Inductor's FX graph cache is not
# keyed by ATEN_CPU_CAPABILITY: code cached while vectorizing for AVX-512 is reused under
# ATEN_CPU_CAPABILITY=default, whose headers lack at::vec, and fails to build. One cache per capability.
_capability = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                      os.path.join(ARGS.cache_dir, "aten-cpu-" + _capability) if _capability else ARGS.cache_dir)
# The engine reads stdout as the protocol channel: keep everything else off it.
PROTOCOL_OUT = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

import operator  # noqa: E402

import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch._export.serde import serialize as _serde  # noqa: E402
from torch.utils import _pytree  # noqa: E402


class Failure(Exception):
    """A typed failure: `kind` is one of the protocol's error kinds."""

    def __init__(self, kind, message, details=None):
        super().__init__(message)
        self.kind = kind
        self.details = details


def _tolerant_treespec_loads(text):
    # The worker never calls the program with its user-facing pytrees, so an output container whose
    # Python class is not importable here (transformers' BaseModelOutput, ...) must not stop a load.
    try:
        return _original_treespec_loads(text)
    except Exception:
        return _pytree.LeafSpec()


_original_treespec_loads = _serde.treespec_loads
_serde.treespec_loads = _tolerant_treespec_loads


def config_value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class Worker:
    def __init__(self):
        self.program = None
        self.by_name = {}        # value or node name -> fx node of the archive's graph
        self.state = {}          # placeholder name -> weight tensor (parameters, buffers, constants)
        self.device = "cpu"
        self.regions = {}        # region id -> (compiled callable, input names, state names)

    # --- requests ----------------------------------------------------------------------------
    def hello(self, req):
        return {"worker": "inductor", "protocol": PROTOCOL, "torch": torch.__version__,
                "cache_dir": os.environ["TORCHINDUCTOR_CACHE_DIR"]}

    def load(self, req):
        path = req["archive"]
        for library in req.get("op_libraries", []):
            try:
                torch.ops.load_library(library)  # custom ops the archive calls, registered before it is read
            except Exception as e:  # noqa: BLE001
                raise Failure("load_failed", f"--load-library {library}: {type(e).__name__}: {first_line(str(e))}")
        self.device = req.get("device", "cpu")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise Failure("load_failed", f"--device {self.device}: this worker's torch {torch.__version__} sees no CUDA device: "
                                         "run pt2diff on the GPU machine, or pass --device cpu to compile for the CPU "
                                         "(a graph exported on a GPU compiles there too)")
        if self.device == "cuda":
            self.device = f"cuda:{torch.cuda.current_device()}"  # the index tensors report, for device asserts
        on_cpu = torch.device(self.device).type == "cpu"
        try:
            with loading_on_cpu() if on_cpu else contextlib.nullcontext():
                ep = torch.export.load(path)
        except Exception as e:  # noqa: BLE001 - any loader error is the archive's problem
            raise Failure("load_failed", f"torch.export.load({path}) failed: {type(e).__name__}: {e}")
        self.program = ep
        gm = ep.graph_module
        self.by_name = {n.name: n for n in gm.graph.nodes}
        if on_cpu:
            # The engine names the CUDA-only fused attention ops (its op catalog is the one list of them).
            self.by_name.update(attention_on_cpu(gm.graph, set(req.get("cuda_fused_attention", []))))
        sig = ep.graph_signature
        state = {}
        for spec in sig.input_specs:
            if spec.target is None:
                continue
            if spec.target in ep.state_dict:
                state[spec.arg.name] = ep.state_dict[spec.target]
            elif spec.target in ep.constants:
                state[spec.arg.name] = ep.constants[spec.target]
        self.state = {k: (v.to(self.device) if isinstance(v, torch.Tensor) else v) for k, v in state.items()}
        self.regions = {}
        return {"nodes": sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem)}

    def compile(self, req):
        if self.program is None:
            raise Failure("bad_request", "compile before load")
        gm, input_names = self.region_module(req["nodes"], req["inputs"], req["outputs"], bool(req.get("exploded")))
        example = self.region_inputs(req["example_inputs"], input_names)
        config = {k: config_value(v) for k, v in req.get("config", {}).items()}
        from torch._inductor import config as inductor_config
        try:
            patch = inductor_config.patch(config)
        except Exception as e:  # noqa: BLE001
            raise Failure("bad_request", f"Inductor config {config}: {e}")
        try:
            # The same entry point as a user's torch.compile (Dynamo, AOTAutograd, Inductor), so the
            # numbers are those the user sees. It compiles on the first call: that call is the compile.
            # Inference (no_grad): the forward a deployed model runs. Under autograd Inductor compiles a
            # training graph whose partitioner may keep low-precision activations for backward, and
            # that changes the forward's rounding.
            settings = req.get("settings", {})
            compiled = torch.compile(gm, backend="inductor", fullgraph=True, dynamic=False)
            with patch, torch.no_grad(), torch_settings(settings):
                compiled(*example)
        except Exception as e:  # noqa: BLE001 - the compiler's message is the point
            raise Failure("compile_failed", describe(e), traceback.format_exc())
        self.regions[req["region"]] = (compiled, input_names, settings)
        return {}

    def run(self, req):
        region = self.regions.get(req["region"])
        if region is None:
            raise Failure("bad_request", f"no compiled region '{req['region']}'")
        compiled, input_names, settings = region
        inputs = self.region_inputs(req["inputs"], input_names)
        try:
            if "seed" in req:
                torch.manual_seed(int(req["seed"]))  # as the engine seeds its own runs: same random stream
            with torch.no_grad(), torch_settings(settings):
                outputs = compiled(*inputs)
        except Exception as e:  # noqa: BLE001
            raise Failure("run_failed", describe(e), traceback.format_exc())
        outputs = [o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs]
        torch.save(outputs, req["outputs_file"])
        return {}

    def export(self, req):
        """The fused region as a standalone torch.export archive, its inputs (weights included, as
        inputs) as a torch.save tuple: a repro anyone can load without the original model."""
        if self.program is None:
            raise Failure("bad_request", "export before load")
        gm, input_names = self.region_module(req["nodes"], req["inputs"], req["outputs"], False)
        # Exported on the load's device (a GPU export's window stays on the GPU, fused kernels and all);
        # the inputs are saved from the CPU, which loads anywhere.
        example = [v.detach() if isinstance(v, torch.Tensor) else v
                   for v in self.region_inputs(req["example_inputs"], input_names)]
        gm = gm.to(self.device)
        try:
            ep = torch.export.export(gm, tuple(example), strict=False)
            torch.export.save(ep, req["archive"])
            torch.save(tuple(v.cpu() if isinstance(v, torch.Tensor) else v for v in example), req["inputs_file"])
        except Exception as e:  # noqa: BLE001
            raise Failure("export_failed", describe(e), traceback.format_exc())
        return {"nodes": [n.name for n in ep.graph.nodes if n.op == "call_function"]}

    def forget(self, req):
        self.regions.pop(req["region"], None)
        return {}

    # --- regions ----------------------------------------------------------------------------
    def node(self, name, role):
        n = self.by_name.get(name)
        if n is None:
            raise Failure("bad_request", f"{role} '{name}' is not in the archive's graph")
        return n

    def region_module(self, node_names, input_names, output_names, exploded):
        """A GraphModule of the named nodes. Fused: nodes read each other. Exploded: every node reads
        placeholders only, so each op is compiled on its own inputs (one graph, independent ops)."""
        graph = self.program.graph_module.graph
        chosen = {self.node(n, "node").name for n in node_names}
        nodes = [n for n in graph.nodes
                 if n.name in chosen or (n.target is operator.getitem and n.args[0].name in chosen)]
        inside = set(nodes)
        new = torch.fx.Graph()
        placeholders = {}
        for name in input_names:
            source = self.node(name, "input")
            ph = new.placeholder(name)
            placeholders[source] = ph
        copies = {}

        def arg_for(user, a):
            if a.op == "get_attr":  # a subgraph of a higher-order op
                if a not in copies:
                    copies[a] = new.get_attr(a.target)
                return copies[a]
            multi_output_part = user.target is operator.getitem and a in inside
            if a in inside and (not exploded or multi_output_part):
                return copies[a]
            if a in placeholders:
                return placeholders[a]
            raise Failure("bad_request", f"node '{user.name}' reads '{a.name}', which is neither a region input "
                                         + ("" if exploded else "nor defined in the region"))

        for n in nodes:
            copies[n] = new.node_copy(n, lambda a, user=n: arg_for(user, a))
            copies[n].meta = {k: n.meta[k] for k in ("stack_trace", "nn_module_stack") if k in n.meta}
            # An export bakes its device into factories, casts and metadata asserts (device=cpu, or
            # cuda:0 for a GPU export): compiled for another device, those arguments follow the compile.
            copies[n].args = torch.fx.node.map_aggregate(copies[n].args, self.on_device)
            copies[n].kwargs = torch.fx.node.map_aggregate(copies[n].kwargs, self.on_device)
        outs = []
        for name in output_names:
            source = self.node(name, "output")
            if source in copies:
                outs.append(copies[source])
            elif source in placeholders:
                outs.append(placeholders[source])
            else:
                raise Failure("bad_request", f"output '{name}' is not defined in the region")
        new.output(tuple(outs))
        return torch.fx.GraphModule(self.program.graph_module, new), list(input_names)

    def on_device(self, value):
        return torch.device(self.device) if isinstance(value, torch.device) else value

    def region_inputs(self, path, input_names):
        try:
            sent = dict(torch.load(path, weights_only=True))  # a tuple of (name, value) pairs
        except Exception as e:  # noqa: BLE001
            raise Failure("bad_request", f"cannot read inputs {path}: {first_line(str(e))}", str(e))
        values = []
        for name in input_names:
            if name in sent:
                v = sent[name]
            elif name in self.state:
                v = self.state[name]
            else:
                raise Failure("bad_request", f"no value for region input '{name}'")
            values.append(v.to(self.device) if isinstance(v, torch.Tensor) else v)
        return values


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


def math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, stride, outputs):
    """What a CUDA fused attention node computes, on any device: math attention, its output laid out with
    the strides the fused kernel gave it (the graph's later views rely on them), and None for the
    `outputs` - 1 others (logsumexp, RNG state), as pt2diff's engine leaves them."""
    out = torch.ops.aten._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)[0]
    if stride is not None and out.stride() != stride:
        # Functional (no copy_ in a traced or exported graph): the dense layout whose dims are ordered
        # by the recorded strides, which is what the fused kernels return.
        order = sorted(range(out.dim()), key=lambda d: -stride[d])
        laid_out = out.permute(order).contiguous().permute(sorted(range(out.dim()), key=order.__getitem__))
        out = laid_out if laid_out.stride() == stride else torch.empty_strided(
            out.shape, stride, dtype=out.dtype, device=out.device).copy_(out)
    return (out,) + (None,) * (outputs - 1)


def attention_on_cpu(graph, fused_attention):
    """A GPU export's fused attention ops have no CPU kernel: compiled for the CPU they become math
    attention, as pt2diff's engine runs them. Returns {old name: new node} so regions can still name
    them. `fused_attention`: the schema names of those ops ("aten::_scaled_dot_product_flash_attention"),
    as the engine sends them at `load`. Only the attention output survives; a graph reading the others
    (logsumexp, RNG state: a training graph) is refused."""
    renamed = {}
    for n in list(graph.nodes):
        schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
        if schema is None or schema.name not in fused_attention:
            continue
        bound = dict(zip((a.name for a in schema.arguments), n.args))
        bound.update(n.kwargs)
        q, k = bound["query"].meta.get("val"), bound["key"].meta.get("val")
        gqa = q is not None and k is not None and q.dim() >= 3 and q.shape[-3] != k.shape[-3]
        val = n.meta.get("val")
        stride = tuple(val[0].stride()) if isinstance(val, (tuple, list)) and isinstance(val[0], torch.Tensor) else None
        with graph.inserting_before(n):
            math = graph.call_function(math_attention, (
                bound["query"], bound["key"], bound["value"], bound.get("attn_bias"), bound.get("dropout_p", 0.0),
                bound.get("is_causal", False), bound.get("scale"), gqa, stride, len(schema.returns)))
        math.meta = {key: n.meta[key] for key in ("stack_trace", "nn_module_stack") if key in n.meta}
        for user in list(n.users):
            index = user.args[1] if user.target is operator.getitem else None
            if index is not None and (index == 0 or not user.users):
                user.args = (math, index)
            else:
                raise Failure("load_failed", f"node '{user.name}' reads output {index} of the CUDA-only fused attention "
                                             f"'{n.name}', which runs on the CPU as math attention (attention output only): "
                                             "export the model for inference, or compile with --device cuda")
        graph.erase_node(n)
        renamed[n.name] = math
    return renamed


@contextlib.contextmanager
def torch_settings(settings):
    """The torch globals a region was compiled under ("matmul_precision", "tf32"), set for its
    compile and every run (cuBLAS and cuDNN read them at call time), then put back."""
    precision = torch.get_float32_matmul_precision()
    matmul_tf32, cudnn_tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        if "matmul_precision" in settings:
            torch.set_float32_matmul_precision(settings["matmul_precision"])
        if settings.get("tf32") is False:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        yield
    finally:
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul_tf32, cudnn_tf32


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text


def describe(e):
    """One line naming what the compiler said: Dynamo's BackendCompilerFailed ("backend='inductor'
    raised:") is unwrapped to the exception inside it, and a C++ compile error names the compiler's
    first error line."""
    inner = getattr(e, "inner_exception", None)
    if inner is not None:
        e = inner
    text = str(e)
    line = f"{type(e).__name__}: {first_line(text)}"
    errors = [l.strip() for l in text.splitlines() if " error: " in l]
    return f"{line}: {errors[0]}" if errors else line


def main():
    worker = Worker()
    handlers = {"hello": worker.hello, "load": worker.load, "compile": worker.compile, "run": worker.run,
                "export": worker.export, "forget": worker.forget}
    for line in sys.stdin:
        if not line.strip():
            continue
        start = time.perf_counter()
        reply = {}
        try:
            req = json.loads(line)
            reply["id"] = req.get("id")
            op = req.get("op")
            if op == "shutdown":
                PROTOCOL_OUT.write(json.dumps({"id": reply["id"], "ok": True, "seconds": 0.0}) + "\n")
                return
            handler = handlers.get(op)
            if handler is None:
                raise Failure("bad_request", f"unknown op '{op}'")
            reply.update(handler(req))
            reply["ok"] = True
        except Failure as f:
            reply.update({"ok": False, "error": f.kind, "message": first_line(str(f))})
            if f.details:
                reply["details"] = f.details
        except Exception as e:  # noqa: BLE001 - a bug in the worker is reported, never a silent death
            reply.update({"ok": False, "error": "worker_error", "message": f"{type(e).__name__}: {first_line(str(e))}",
                          "details": traceback.format_exc()})
        reply["seconds"] = time.perf_counter() - start
        if not reply["ok"] and reply.get("details"):
            print(reply["details"], file=sys.stderr, flush=True)  # the full story, in the worker's log
            del reply["details"]
        PROTOCOL_OUT.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
