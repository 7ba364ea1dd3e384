"""A tensor-parallel block trained one step on every rank of a gloo process group, compiled with the capture backend
(training=True): a column-parallel `up`, a row-parallel `down`, one all_reduce of the partial sums through
torch.distributed._functional_collectives. Run by `python -m pt2diff_capture ranks --nproc N tp_step.py OUT`
(tests/python/pt2diff_capture/test_capture_ranks.py); writes OUT/rank_R for each rank R."""
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import pt2diff_capture

import os

# TP_DEVICE=cuda: NCCL, rank R on cuda:R (a multi-GPU machine: scripts/gpu_test.sh); else gloo on the CPU.
on_gpu = os.environ.get("TP_DEVICE") == "cuda"
dist.init_process_group("nccl" if on_gpu else "gloo")
world, rank = dist.get_world_size(), dist.get_rank()
device = torch.device(f"cuda:{rank}") if on_gpu else torch.device("cpu")
if on_gpu:
    torch.cuda.set_device(device)
split = [int(s) for s in os.environ.get("TP_SPLIT", "10,6" if world == 2 else ",".join(["4"] * world)).split(",")]
torch.manual_seed(100 + rank)


class TP(torch.nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.up = torch.nn.Linear(d, split[rank], bias=False)  # column-parallel: this rank's rows of the weight
        self.down = torch.nn.Linear(split[rank], d, bias=False)  # row-parallel: this rank's columns

    def forward(self, x):
        partial = self.down(torch.relu(self.up(x)))
        return funcol.all_reduce(partial, "sum", dist.group.WORLD)


model = TP().to(device)
torch.manual_seed(0)
x = torch.randn(4, 8).to(device)  # the same on every rank
# TP_BACKEND=inductor: the user's own compiled step (bench/dist_bench.py's baseline), nothing captured.
backend = "inductor" if os.environ.get("TP_BACKEND") == "inductor" else \
    pt2diff_capture.capture_backend(sys.argv[1], training=True, quiet=True)
compiled = torch.compile(model, backend=backend)
compiled(x).pow(2).sum().backward()
dist.destroy_process_group()
