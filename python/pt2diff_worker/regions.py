"""Regions: GraphModules cut out of a torch.export archive's graph, as the engine names them.

A region is a set of node names plus the value names it reads (`inputs`, in call order) and returns
(`outputs`). Fused: nodes read each other. Exploded: every node reads placeholders only, so each op
runs on the inputs the engine chose. Also here: the CPU stand-in for CUDA-only fused attention.
"""
import operator

import torch
import torch.fx

from .protocol import Failure

#: Node metadata a region's copies keep (source lines and module paths, for compiler messages).
KEPT_META = ("stack_trace", "nn_module_stack")


def lookup(by_name, name, role):
    """The node named `name` in `by_name` (name -> fx node); `role` ("node", "input", "output") names it
    in the bad_request failure raised when it is missing."""
    n = by_name.get(name)
    if n is None:
        raise Failure("bad_request", f"{role} '{name}' is not in the archive's graph")
    return n


_EAGER_CALLS = {}


def eager_call(target):
    """`target` (an op or function of the graph) behind `torch.compiler.disable`: what a user's
    `torch.compiler.disable` on a module or function does to the ops inside it. Dynamo breaks the graph
    at the call and runs it in eager PyTorch. One wrapper per target, named after it (compiler logs)."""
    wrapper = _EAGER_CALLS.get(target)
    if wrapper is None:
        def run_eagerly(*args, **kwargs):
            return target(*args, **kwargs)
        run_eagerly.__name__ = run_eagerly.__qualname__ = "eager_" + str(target).replace(".", "_")
        wrapper = _EAGER_CALLS[target] = torch.compiler.disable(run_eagerly)
    return wrapper


def region_module(root, by_name, node_names, input_names, output_names, exploded=False, device=None, eager=()):
    """A GraphModule of the named nodes, their names kept, and the list of its input names.

    `root`: the archive's GraphModule (the owner of the graph and of any get_attr subgraph); `by_name`:
    value or node name -> its fx node (`{n.name: n for n in root.graph.nodes}`, plus any renamed node).
    Fused (`exploded` false): nodes read each other; every other value they read must be in
    `input_names`. Exploded: every node reads placeholders only (the parts of a multi-output node
    excepted), so each op is compiled on its own inputs (one graph, independent ops). The module takes
    `input_names` as placeholders, in order, and returns the tuple of `output_names`.
    `device`: torch.device arguments baked into the graph (factories, casts, metadata asserts) are
    rewritten to it; None leaves them as exported. Unknown names and values the region cannot read
    raise Failure("bad_request", ...).
    `eager`: names of region nodes left to eager PyTorch (each call wrapped by eager_call, so that
    torch.compile breaks the graph there, as torch.compiler.disable does in a user's program)."""
    graph = root.graph
    chosen = {lookup(by_name, n, "node").name for n in node_names}
    left_eager = {lookup(by_name, n, "node").name for n in eager}
    if not left_eager <= chosen:
        raise Failure("bad_request", f"eager nodes {sorted(left_eager - chosen)} are not in the region")
    nodes = [n for n in graph.nodes
             if n.name in chosen or (n.target is operator.getitem and n.args[0].name in chosen)]
    inside = set(nodes)
    new = torch.fx.Graph()
    placeholders = {}
    for name in input_names:
        source = lookup(by_name, name, "input")
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

    def on_device(value):
        return torch.device(device) if isinstance(value, torch.device) else value

    for n in nodes:
        copies[n] = new.node_copy(n, lambda a, user=n: arg_for(user, a))
        copies[n].meta = {k: n.meta[k] for k in KEPT_META if k in n.meta}
        # The exported name, carried by Dynamo, AOTAutograd and Inductor onto every node made from this
        # one (their own node names differ): what the kernel map names buffers by (kernel_map.py).
        copies[n].meta["custom"] = {"pt2diff_node": n.name}
        if n.name in left_eager and n.op == "call_function":
            copies[n].target = eager_call(n.target)
        if device is not None:
            # An export bakes its device into factories, casts and metadata asserts (device=cpu, or
            # cuda:0 for a GPU export): compiled for another device, those arguments follow the compile.
            copies[n].args = torch.fx.node.map_aggregate(copies[n].args, on_device)
            copies[n].kwargs = torch.fx.node.map_aggregate(copies[n].kwargs, on_device)
    outs = []
    for name in output_names:
        source = lookup(by_name, name, "output")
        if source in copies:
            outs.append(copies[source])
        elif source in placeholders:
            outs.append(placeholders[source])
        else:
            raise Failure("bad_request", f"output '{name}' is not defined in the region")
    new.output(tuple(outs))
    return torch.fx.GraphModule(root, new), list(input_names)


def written_inputs(gm):
    """The names of `gm`'s placeholders whose storage one of its ops writes in place: an argument its schema marks
    written (`Tensor(a!)`), followed back through views (an output in the same alias set as an argument) to a
    placeholder. What a caller must copy before each call when the value is shared (an archive's weights)."""
    base = {}  # node -> the placeholder whose storage it shares

    def root(a):
        return base.get(a) if isinstance(a, torch.fx.Node) else None

    written = set()
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            base[n] = n
            continue
        schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
        if schema is None:
            continue
        bound = dict(zip((a.name for a in schema.arguments), n.args))
        bound.update(n.kwargs)
        # batch_norm, native_batch_norm and instance_norm in training update their running statistics, though
        # their schema marks no argument written (as the engine's dispatcher kernel knows too).
        stats = schema.name in ("aten::batch_norm", "aten::native_batch_norm", "aten::instance_norm") and \
            bound.get("use_input_stats" if schema.name == "aten::instance_norm" else "training") is True
        for a in schema.arguments:
            if (a.alias_info is not None and a.alias_info.is_write) or (stats and a.name in ("running_mean", "running_var")):
                for arg in (bound.get(a.name) if isinstance(bound.get(a.name), (list, tuple)) else [bound.get(a.name)]):
                    if root(arg) is not None:
                        written.add(root(arg).name)
        ret = schema.returns[0] if len(schema.returns) == 1 else None
        if ret is not None and ret.alias_info is not None:
            for a in schema.arguments:
                if a.alias_info is not None and set(a.alias_info.before_set) & set(ret.alias_info.before_set):
                    if root(bound.get(a.name)) is not None:
                        base[n] = root(bound.get(a.name))
                    break
    return written


def graphs_on_device(gm, device, export_device_type):
    """Every graph of `gm` (the top level and the bodies of its higher-order ops) with the devices an export
    baked in rewritten for `device`, in place, as the engine's runs map them (run_device in
    engine/execution/kernel_factory.cpp): torch.device arguments become `device`, and a torch.autocast
    region's device type becomes `device`'s type when it is the export's or "cuda" (on a CPU, always "cpu"),
    so that a CPU export's autocast casts on the GPU it is compiled for, as pt2diff's eager run there does."""
    target = torch.device(device)

    def autocast_type(device_type):
        if target.type == "cpu":
            return "cpu"
        return target.type if device_type in (export_device_type, "cuda") else device_type

    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        changed = False
        for n in module.graph.nodes:
            if n.op != "call_function":
                continue
            args = torch.fx.node.map_aggregate(n.args, lambda v: target if isinstance(v, torch.device) else v)
            kwargs = torch.fx.node.map_aggregate(n.kwargs, lambda v: target if isinstance(v, torch.device) else v)
            if n.target is torch.ops.higher_order.wrap_with_autocast and isinstance(args[0], str):
                args = (autocast_type(args[0]),) + tuple(args[1:])
            if args != n.args or kwargs != n.kwargs:
                n.args, n.kwargs, changed = args, kwargs, True
        if changed:
            module.recompile()


_AUTOCAST_CALLS = {}


def autocast_call(target, device_type, dtype, enabled, cache_enabled):
    """`target` called under `torch.autocast(device_type, dtype, enabled, cache_enabled)`: one op of an
    inlined autocast region (inline_autocast), which torch.compile traces as the region's own ops."""
    key = (target, device_type, dtype, enabled, cache_enabled)
    wrapper = _AUTOCAST_CALLS.get(key)
    if wrapper is None:
        def under_autocast(*args, **kwargs):
            with torch.autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled):
                return target(*args, **kwargs)
        under_autocast.__name__ = under_autocast.__qualname__ = "autocast_" + str(target).replace(".", "_")
        wrapper = _AUTOCAST_CALLS[key] = under_autocast
    return wrapper


def inline_autocast(gm, regions):
    """Inlines top-level `wrap_with_autocast` nodes into `gm`'s graph, in place, as the engine inlined them
    into the graph it runs (graphs/inline_region.cpp, the one inliner): `regions` is the load request's
    `inline_autocast` ({region: {"nodes", "values"}}, as `pt2diff inspect --json` shows it under
    "inlined"), mapping each body op node's and each body value's name to the name the engine gave it.
    Each body op becomes a top-level call under the region's autocast (autocast_call), named as the engine
    named its value (a returned value takes a region output's name) or, for an op of several outputs, its
    node; the region's getitems go.
    Returns ({engine name: node} for the engine's node and value names, {region: [the engine's node names of
    the ops made, in graph order]}) for the load reply, which the engine checks against its own graph.
    Failure("load_failed") when a name is not such a region, or a body node has no engine name (the two
    inliners would disagree)."""
    graph = gm.graph
    aliases, built = {}, {}
    for region_name, spec in regions.items():
        node_names, value_names = spec.get("nodes", {}), spec.get("values", {})
        region = next((n for n in graph.nodes if n.name == region_name), None)
        if region is None or region.target is not torch.ops.higher_order.wrap_with_autocast:
            raise Failure("load_failed", f"'{region_name}' is not a wrap_with_autocast node of the archive's graph")
        device_type, dtype, enabled, cache_enabled, body_attr = region.args[:5]
        operands = list(region.args[5:])
        body = getattr(gm, body_attr.target).graph
        placeholders = [n for n in body.nodes if n.op == "placeholder"]
        if len(placeholders) != len(operands):
            raise Failure("load_failed", f"{region_name} passes {len(operands)} operands to a body of {len(placeholders)} inputs")
        env = dict(zip(placeholders, operands))
        returned = next(n for n in body.nodes if n.op == "output").args[0]
        returned = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        users = {u.args[1]: u for u in region.users if u.target is operator.getitem}
        if len(users) != len(region.users):
            raise Failure("load_failed", f"{region_name}'s outputs are read other than by index")
        copies = {}
        with graph.inserting_before(region):
            for n in body.nodes:
                if n.op in ("placeholder", "output"):
                    continue
                if n.op == "get_attr":  # a nested body: registered on the body module; copy it up
                    sub = getattr(getattr(gm, body_attr.target), n.target)
                    name = n.target if not hasattr(gm, n.target) else f"{n.target}_{region_name}"
                    gm.add_submodule(name, sub)
                    env[n] = graph.get_attr(name)
                    continue
                if n.name not in value_names and n.name not in node_names:
                    raise Failure("load_failed", f"the body node {n.name} of {region_name} has no name in the engine's inlined "
                                                 "graph: the two inliners disagree")
                copy = graph.node_copy(n, lambda a: env[a])
                copy.meta = {k: n.meta[k] for k in KEPT_META + ("val",) if k in n.meta}
                if n.op == "call_function":
                    copy.target = autocast_call(n.target, device_type, dtype, enabled, cache_enabled)
                env[n] = copy
                copies[n] = copy
        for k, user in users.items():
            user.replace_all_uses_with(env[returned[k]])
            graph.erase_node(user)
        graph.erase_node(region)
        if not body_attr.users:
            graph.erase_node(body_attr)
        # Names last, once the region's getitems are gone: theirs pass to the values the body returns. Set
        # directly: fx's namespace never frees a name (its _rename would pick "getitem_1").
        built[region_name] = []
        for n, copy in copies.items():
            copy.name = value_names.get(n.name, node_names.get(n.name))
            aliases[copy.name] = copy
            if n.name in node_names:
                aliases[node_names[n.name]] = copy
                built[region_name].append(node_names[n.name])
        names = [n.name for n in graph.nodes]
        if len(set(names)) != len(names):
            raise Failure("load_failed", f"the body of {region_name} cannot be inlined: a renamed body node's name is taken")
    graph.lint()
    gm.recompile()
    return aliases, built


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
    attention, as pt2diff's engine runs them. Rewrites `graph` in place and returns {old name: new node}
    so regions can still name them. `fused_attention`: the schema names of those ops
    ("aten::_scaled_dot_product_flash_attention"), as the engine sends them at `load`. Only the attention
    output survives; a graph reading the others (logsumexp, RNG state: a training graph) is refused
    (Failure "load_failed")."""
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
        math.meta = {key: n.meta[key] for key in KEPT_META if key in n.meta}
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
