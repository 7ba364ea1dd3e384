"""An FSDP-style step trained once on every rank of a gloo process group, compiled with the capture backend
(training=True): each rank holds a shard (rows) of each weight; the forward all-gathers the full weights
(`all_gather_tensor_autograd`), the backward reduce-scatters their gradients (its autograd), and each rank feeds its own
batch, so the gradients of every rank are summed. Run by `python -m pt2diff_capture ranks --nproc N fsdp_step.py OUT`
(tests/python/pt2diff_capture/test_dist_fsdp.py). TP_BACKEND=inductor: the user's own compiled step, nothing captured."""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import pt2diff_capture

dist.init_process_group("gloo")
world, rank = dist.get_world_size(), dist.get_rank()
torch.manual_seed(100 + rank)


class Sharded(torch.nn.Module):
    def __init__(self, d=8, h=16):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(h // world, d) / d ** 0.5)  # this rank's rows of each weight
        self.w2 = torch.nn.Parameter(torch.randn(d // world, h) / h ** 0.5)

    def forward(self, x):
        w1 = funcol.all_gather_tensor_autograd(self.w1, 0, dist.group.WORLD)  # the full weights, gathered
        w2 = funcol.all_gather_tensor_autograd(self.w2, 0, dist.group.WORLD)
        return torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(x, w1)), w2)


model = Sharded()
x = torch.randn(4, 8)  # this rank's batch
backend = "inductor" if os.environ.get("TP_BACKEND") == "inductor" else \
    pt2diff_capture.capture_backend(sys.argv[1], training=True, quiet=True)
compiled = torch.compile(model, backend=backend)
compiled(x).pow(2).sum().backward()
dist.destroy_process_group()
