#!/usr/bin/env python3
"""On a CUDA machine: the worker's `settings` really switch TF32 for compiled fp32 convolutions and
matmuls (the tf32_off lever). Run by hand on a GPU box: python tests/device/tf32_settings_cuda.py

Prints, for a conv and a matmul compiled by Inductor, the RMSE to an fp64 reference with torch's
defaults, with matmul precision "high", and with settings {"tf32": False}.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "backends"))
sys.argv = [sys.argv[0]]
from inductor_worker import torch_settings  # noqa: E402


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def main():
    assert torch.cuda.is_available(), "needs a CUDA device"
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(8, 64, 32, 32, generator=g), torch.randn(64, 64, 3, 3, generator=g)
    a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    conv_ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    mm_ref = a.double() @ b.double()
    for label, settings in (("defaults", {}), ("matmul_precision=high", {"matmul_precision": "high"}),
                            ("tf32 off", {"tf32": False}), ("high + tf32 off", {"matmul_precision": "high", "tf32": False})):
        torch._dynamo.reset()
        conv = torch.compile(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1))
        mm = torch.compile(lambda a, b: a @ b)
        with torch.no_grad(), torch_settings(settings):
            c = conv(x.cuda(), w.cuda()).cpu()
            m = mm(a.cuda(), b.cuda()).cpu()
        print(f"{label:<22} conv RMSE to fp64 {rmse(c, conv_ref):.3e}   matmul RMSE to fp64 {rmse(m, mm_ref):.3e}")
    print("restored:", torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)


if __name__ == "__main__":
    main()
