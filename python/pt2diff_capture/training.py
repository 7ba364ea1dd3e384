"""A training step as one graph pt2diff diffs: the forward, the loss and the backward, whose outputs are the loss
and every parameter's gradient (docs/training.md).

    pt2diff_capture.export_training_step(model, (x,), loss_fn=F.cross_entropy, targets=(y,), out="step")
    # step.pt2 + step_inputs.pt:  pt2diff step.pt2 step_inputs.pt

The graph is traced as AOTAutograd traces a joint graph (make_fx of the forward and torch.autograd.grad, with
fake tensors), at the ATen level with no decomposition: a backward node is the op autograd runs
(native_layer_norm_backward, _softmax_backward_data, convolution_backward, mm ...). Each backward node carries the
forward node it is the gradient of (its `custom` metadata "backward_of", from autograd's sequence numbers, as
AOTAutograd's copy_fwd_metadata_to_bw_nodes pairs them) and that node's stack trace, so a report names "the
gradient of native_layer_norm at model.py:41". Batch norm in train mode writes its running statistics into the
buffers in place: pt2diff judges them after the graph. The module is not changed (the trace runs on fake tensors).
"""
import operator
import warnings

import torch
import torch.utils._pytree as pytree
from torch.export.exported_program import ModuleCallEntry, ModuleCallSignature
from torch.export.graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                                          TensorArgument)

from .export import leaf_names, write_archive, write_inputs
from .normalize import CaptureError, describe, one_line


def export_training_step(module, args, loss_fn=None, targets=(), kwargs=None, out="step"):
    """Writes OUT.pt2 and OUT_inputs.pt: one training step of `module` as a graph whose outputs are the loss and the
    gradient of every parameter that requires one (named `NAME.grad` in pt2diff's report), then the gradient of every
    input in `args` or `kwargs` that requires grad (`x.requires_grad_()`: named `x.grad`, by its input's name).

    The loss is `loss_fn(module(*args, **kwargs), *targets)`, or the module's output itself when `loss_fn` is None
    (then it must be a scalar tensor). `targets` are graph inputs like `args` (labels, a target tensor), so the
    step runs on the saved inputs. The module runs in the mode it is in (call `module.train()` first for dropout and
    batch statistics). Returns an Exported; raises CaptureError with one line when the step cannot be traced."""
    ep, leaves, names = training_program(module, args, loss_fn, targets, kwargs)
    inputs = write_inputs(leaves, names, out + "_inputs.pt")
    return write_archive(ep, out + ".pt2", inputs, [describe(v, n) for v, n in zip(leaves, names)])


def training_program(module, args, loss_fn=None, targets=(), kwargs=None):
    """The training step's ExportedProgram (as export_training_step writes it), its flat inputs (the leaves of args,
    targets and kwargs, in that order) and their names."""
    if not isinstance(module, torch.nn.Module):
        raise CaptureError(f"a training step needs an nn.Module (its parameters get the gradients), not {type(module).__name__}")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    targets = tuple(targets) if isinstance(targets, (tuple, list)) else (targets,)
    kwargs = dict(kwargs or {})
    params = {k: p for k, p in module.named_parameters() if p.requires_grad}
    frozen = {k: p for k, p in module.named_parameters() if not p.requires_grad}
    if not params:
        raise CaptureError("the module has no parameter that requires grad: there is no gradient to judge "
                           "(a frozen model is an inference graph: pt2diff_capture.export_module)")
    buffers = dict(module.named_buffers())
    leaves, spec = pytree.tree_flatten(((*args, *targets), kwargs))
    if not all(isinstance(v, torch.Tensor) for v in leaves):
        raise CaptureError("a training step's inputs and targets must be tensors (others would be baked into the graph)")
    names = leaf_names(module, args, kwargs)  # the args' leaves, then the kwargs'; the targets' go between
    n_arg_leaves = len(pytree.tree_leaves(args))
    names[n_arg_leaves:n_arg_leaves] = _target_names(len(pytree.tree_leaves(targets)), set(names))
    # The inputs whose gradient the step returns: those of args and kwargs that require grad (a target is data).
    n_target_leaves = len(pytree.tree_leaves(targets))
    wanted = [i for i, v in enumerate(leaves) if v.requires_grad and (i < n_arg_leaves or i >= n_arg_leaves + n_target_leaves)]
    if any(not leaves[i].is_floating_point() for i in wanted):
        raise CaptureError("an input that requires grad must be a floating-point tensor")
    leaves = [v.detach() for v in leaves]
    gm, loss_node, grad_nodes = _trace(module, params, frozen, buffers, leaves, spec, len(args), loss_fn, wanted)
    _real_dtypes(gm, [t.detach().clone() for t in (*params.values(), *frozen.values(), *buffers.values())] + list(leaves))
    placeholders = _name_placeholders(gm, [*params, *frozen], list(buffers), names)
    _link_backward_to_forward(gm)
    n_state = len(params) + len(frozen) + len(buffers)
    grad_targets = list(params) + [placeholders[n_state + i].name for i in wanted]
    return _program(gm, placeholders, params, frozen, buffers, loss_node, grad_nodes, grad_targets), leaves, names


def _target_names(n, taken):
    names = []
    for i in range(n):
        name = "target" if n == 1 else f"target_{i}"
        while name in taken:
            name += "_"
        names.append(name)
    return names


def _trace(module, params, frozen, buffers, leaves, spec, n_args, loss_fn, wanted=()):
    """make_fx (fake tensors) of forward + loss + torch.autograd.grad; returns the GraphModule, the loss node and
    one gradient node per parameter, then per input of index `wanted` in `leaves` (None where the loss does not
    depend on it)."""
    from torch._functorch._aot_autograd.logging_utils import setup_stacktrace_preservation_hooks
    from torch.fx.experimental.proxy_tensor import make_fx

    pnames, fnames, bnames = list(params), list(frozen), list(buffers)

    def step(*flat):
        p = dict(zip(pnames, flat[:len(pnames)]))
        state = {**p, **dict(zip(fnames + bnames, flat[len(pnames):len(pnames) + len(fnames) + len(bnames)]))}
        user = list(flat[len(pnames) + len(fnames) + len(bnames):])
        inputs, kwargs = pytree.tree_unflatten(user, spec)
        with torch.enable_grad(), torch.fx.traceback.preserve_node_meta():
            # Anomaly mode keeps each forward op's stack on its autograd node; the hooks hand it (and its sequence
            # number) to the backward ops autograd runs for it, as AOTAutograd's joint trace does.
            with torch.autograd.detect_anomaly(check_nan=False):
                output = torch.func.functional_call(module, state, inputs[:n_args], kwargs)
                loss = output if loss_fn is None else loss_fn(output, *inputs[n_args:])
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
                raise CaptureError(f"the loss must be a one-element tensor that depends on the parameters, not "
                                   f"{_what(loss)} (pass loss_fn=, e.g. loss_fn=torch.nn.functional.cross_entropy)")
            setup_stacktrace_preservation_hooks([loss.grad_fn])
            # On the calling thread (a CUDA backward runs on the device's own thread otherwise), where the hooks
            # set the metadata the tracer records.
            with torch.autograd.set_multithreading_enabled(False):
                grads = torch.autograd.grad(loss, list(p.values()) + [user[i] for i in wanted], allow_unused=True)
        return (loss, *grads)

    flat = [t.detach().requires_grad_(True) for t in params.values()]
    flat += [t.detach() for t in (*frozen.values(), *buffers.values())]
    flat += [t.detach().requires_grad_(True) if i in wanted else t for i, t in enumerate(leaves)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled"
            step._orig_mod = module  # make_fx records each node's module path inside this module
            gm = make_fx(step, tracing_mode="fake", record_stack_traces=True, record_module_stack=True)(*flat)
    except CaptureError:
        raise
    except Exception as e:  # noqa: BLE001 - the tracer's message is the point
        why = one_line(e)
        if "data-dependent" in why or "DataDependent" in why:
            why += (" (the step branches on a tensor's value, which a trace cannot follow: use torch.where or "
                    "torch.cond, or decide outside the model)")
        raise CaptureError(f"the training step cannot be traced: {why}") from e
    outputs = gm.graph.output_node().args[0]
    return gm, outputs[0], [o if isinstance(o, torch.fx.Node) else None for o in outputs[1:]]


def _real_dtypes(gm, flat):
    """Runs the traced step once on real tensors (copies of the state: the run writes the buffers) and gives each
    value the dtype its kernel really returns where the fake trace said another: on CUDA, native_layer_norm and
    native_batch_norm keep their statistics of a bfloat16 input in float32, which their meta functions do not say,
    and the ops that read them follow."""
    from torch._guards import detect_fake_mode

    fake = detect_fake_mode([n.meta["val"] for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)])
    if fake is None:
        return

    def fixed(meta, real):
        if isinstance(meta, torch.Tensor) and isinstance(real, torch.Tensor) and meta.dtype != real.dtype:
            with fake:
                return meta.to(real.dtype), True
        return meta, False

    class Real(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            val = n.meta.get("val")
            if isinstance(val, (tuple, list)) and isinstance(out, (tuple, list)):
                pairs = [fixed(m, r) for m, r in zip(val, out)]
                if any(c for _, c in pairs):
                    n.meta["val"] = type(val)(m for m, _ in pairs)
            else:
                new, changed = fixed(val, out)
                if changed:
                    n.meta["val"] = new
            return out

    with torch.no_grad():
        Real(gm).run(*flat)


def _what(loss):
    if isinstance(loss, torch.Tensor):
        return f"a tensor of shape {list(loss.shape)}" + ("" if loss.requires_grad else " that needs no grad")
    return type(loss).__name__


def _name_placeholders(gm, param_names, buffer_names, input_names):
    """Names the placeholders as torch.export does (p_fc1_weight, b_bn_running_mean, then the inputs')."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = [f"p_{k.replace('.', '_')}" for k in param_names] + [f"b_{k.replace('.', '_')}" for k in buffer_names]
    names += list(input_names)
    for node, name in zip(placeholders, names):
        node.name = node.target = name
    gm.recompile()
    return placeholders


def _link_backward_to_forward(gm):
    """Each backward node (meta autograd_backward; before torch 2.12, which has no such mark, every node after the
    loss) gets the forward node of the same sequence number: its stack trace and module path, and its name in
    `custom` metadata ("backward_of"). The forward node of a sequence number is its first op that computes (not a
    getitem, a detach, an allocation or an in-place update of a buffer)."""
    skip = {operator.getitem, torch.ops.aten.detach.default, torch.ops.aten.empty.memory_format}
    forward = {}
    loss = gm.graph.output_node().args[0][0]
    after_loss = False  # torch before 2.12 marks no node autograd_backward: the backward follows the loss
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.meta.get("nn_module_stack"):  # the root module's entry (path ""): torch.export records none
            n.meta["nn_module_stack"] = {k: v for k, v in n.meta["nn_module_stack"].items() if v[0]}
        seq = n.meta.get("seq_nr")
        if n.meta.get("autograd_backward") or after_loss:
            f = forward.get(seq)
            if f is not None:
                n.meta["stack_trace"] = f.meta.get("stack_trace")
                n.meta["nn_module_stack"] = f.meta.get("nn_module_stack")
                n.meta["custom"] = {**n.meta.get("custom", {}), "backward_of": f.name}
        elif seq is not None and n.target not in skip and not _writes(n):
            forward.setdefault(seq, n)
        after_loss = after_loss or n is loss


def _writes(n):
    schema = getattr(n.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _program(gm, placeholders, params, frozen, buffers, loss_node, grad_nodes, grad_targets):
    """The ExportedProgram of the step (training IR: buffers written in place, as torch.export's default). Each of
    `grad_nodes` is the gradient of the parameter or input placeholder named by `grad_targets` at its index."""
    from torch._export.verifier import TrainingIRVerifier

    n_state = len(params) + len(frozen) + len(buffers)
    specs = [InputSpec(InputKind.PARAMETER, TensorArgument(ph.name), k)
             for ph, k in zip(placeholders, [*params, *frozen])]
    specs += [InputSpec(InputKind.BUFFER, TensorArgument(ph.name), k, persistent=True)
              for ph, k in zip(placeholders[len(params) + len(frozen):], buffers)]
    specs += [InputSpec(InputKind.USER_INPUT, TensorArgument(ph.name), None) for ph in placeholders[n_state:]]
    outputs = [OutputSpec(OutputKind.LOSS_OUTPUT, TensorArgument(loss_node.name), None)]
    outputs += [OutputSpec(OutputKind.GRADIENT_TO_PARAMETER if i < len(params) else OutputKind.GRADIENT_TO_USER_INPUT,
                           TensorArgument(g.name), k)
                for i, (g, k) in enumerate(zip(grad_nodes, grad_targets)) if g is not None]
    out_node = gm.graph.output_node()
    out_node.args = ((loss_node, *[g for g in grad_nodes if g is not None]),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    in_spec = pytree.tree_flatten((tuple(placeholders[n_state:]), {}))[1]
    out_spec = pytree.tree_flatten(tuple(out_node.args[0]))[1]
    state = {**params, **frozen, **buffers}
    try:
        return torch.export.ExportedProgram(
            root=gm, graph=gm.graph, graph_signature=ExportGraphSignature(specs, outputs), state_dict=state,
            range_constraints={}, example_inputs=None, constants={}, verifiers=[TrainingIRVerifier],
            module_call_graph=[ModuleCallEntry("", ModuleCallSignature(inputs=[], outputs=[], in_spec=in_spec,
                                                                       out_spec=out_spec))])
    except Exception as e:  # noqa: BLE001
        raise CaptureError(f"the training step's graph is not a valid program: {one_line(e)}") from e


__all__ = ["export_training_step", "training_program"]
