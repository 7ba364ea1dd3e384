"""A training step's graph (pt2diff_capture.export_training_step: the forward, the loss and the backward in one graph,
outputs the loss, every parameter's gradient and those of the inputs that require grad) compiled as torch.compile
compiles a training step.

The region that returns the loss and every gradient is not compiled as one inference graph: its forward (the nodes
up to the loss, in graph order) is compiled with torch.compile, the parameters requiring grad, and the gradients
come from torch.autograd.grad through it (to the parameters, and to the inputs whose gradient the step returns).
AOTAutograd traces the joint graph, partitions it into a forward and a backward graph (what the forward saves, what
the backward recomputes) and Inductor compiles each, as in the user's training loop. Smaller regions (a window, one op) are compiled as they are, as inference graphs (docs/training.md).
"""
import torch
from torch.export.graph_signature import InputKind, OutputKind

from .protocol import Failure


def step_signature(program):
    """(the loss's value name, [(gradient value name, the placeholder name of its parameter or user input)]) when
    `program` is a training step, else None."""
    sig = program.graph_signature
    loss = [s.arg.name for s in sig.output_specs if s.kind == OutputKind.LOSS_OUTPUT]
    placeholder = {s.target: s.arg.name for s in sig.input_specs if s.kind == InputKind.PARAMETER}
    user = {s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT}
    grads = [(s.arg.name, placeholder.get(s.target)) for s in sig.output_specs
             if s.kind == OutputKind.GRADIENT_TO_PARAMETER]
    grads += [(s.arg.name, s.target if s.target in user else None) for s in sig.output_specs
              if s.kind == OutputKind.GRADIENT_TO_USER_INPUT]
    if len(loss) != 1 or not grads or any(p is None for _, p in grads):
        return None
    return loss[0], grads


def is_whole_step(program, output_names, exploded, eager):
    """Whether a region is the whole training step: fused, nothing left eager, returning the loss and every gradient."""
    step = step_signature(program)
    if step is None or exploded or eager:
        return False
    loss, grads = step
    return loss in output_names and all(g in output_names for g, _ in grads)


def forward_nodes(program, node_names):
    """The region's nodes up to and including the loss, in graph order: the forward of the step (the tracer records
    the forward before autograd runs the backward)."""
    loss, _ = step_signature(program)
    chosen, nodes = set(node_names), []
    for n in program.graph.nodes:
        if n.op == "call_function" and n.name in chosen:
            nodes.append(n.name)
        if n.name == loss:
            break
    return nodes


class TrainingStep:
    """Calls the compiled forward with the parameters requiring grad, then torch.autograd.grad through it: the
    region's outputs (the loss, the gradients, and any input it writes, as the forward leaves it) in its order."""

    def __init__(self, compiled_forward, program, input_names, output_names):
        loss, grads = step_signature(program)
        self.compiled = compiled_forward
        self.params = [input_names.index(p) for _, p in grads]
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.loss = loss
        self.grad_of = {g: k for k, (g, _) in enumerate(grads)}

    def __call__(self, *inputs):
        leaves = list(inputs)
        for i in self.params:
            leaves[i] = leaves[i].detach().requires_grad_(True)
        with torch.enable_grad():
            (loss,) = self.compiled(*leaves)
            grads = torch.autograd.grad(loss, [leaves[i] for i in self.params], allow_unused=True)
        out = []
        for name in self.output_names:
            if name == self.loss:
                out.append(loss.detach())
            elif name in self.grad_of:
                g = grads[self.grad_of[name]]
                out.append(torch.zeros_like(leaves[self.params[self.grad_of[name]]]) if g is None else g)
            elif name in self.input_names:  # a graph input the step writes in place (a running statistic)
                out.append(leaves[self.input_names.index(name)].detach())
            else:
                raise Failure("bad_request", f"output '{name}' of a whole training step is neither its loss, a "
                                             "gradient nor an input it writes")
        return tuple(out)


def compile_step(archive, node_names, input_names, output_names):
    """The whole step's region as a TrainingStep (its forward through torch.compile, not yet called)."""
    program = archive.program
    loss, _ = step_signature(program)
    forward, _ = archive.region_module(forward_nodes(program, node_names), input_names, [loss], False)
    compiled = torch.compile(forward, backend="inductor", fullgraph=True, dynamic=False)
    return TrainingStep(compiled, program, input_names, output_names)
