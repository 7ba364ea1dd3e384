#!/usr/bin/env python3
"""On a CUDA machine: the worker's `settings` really switch TF32 for compiled fp32 convolutions and
matmuls (the tf32_off lever). Run by hand on a GPU box: python tests/device/tf32_settings_cuda.py

Prints, for a conv and a matmul compiled by Inductor, the RMSE to an fp64 reference with torch's
defaults, with matmul precision "high", and with settings {"tf32": False}; exits 1 unless TF32 shows
where it should (matmul at "high", conv at cuDNN's default) and "tf32": False removes it (scripts/gpu_test.sh).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from pt2diff_worker import cli  # noqa: E402

cli.setup_environment(os.path.expanduser(cli.DEFAULT_CACHE_DIR))  # the worker's Inductor cache, before torch
import torch  # noqa: E402
from pt2diff_worker.inductor import torch_settings  # noqa: E402


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def main():
    assert torch.cuda.is_available(), "needs a CUDA device"
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(8, 64, 32, 32, generator=g), torch.randn(64, 64, 3, 3, generator=g)
    a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    conv_ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    mm_ref = a.double() @ b.double()
    results = {}
    for label, settings in (("defaults", {}), ("matmul_precision=high", {"matmul_precision": "high"}),
                            ("tf32 off", {"tf32": False}), ("high + tf32 off", {"matmul_precision": "high", "tf32": False})):
        torch._dynamo.reset()
        conv = torch.compile(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1))
        mm = torch.compile(lambda a, b: a @ b)
        with torch.no_grad(), torch_settings(settings):
            c = conv(x.cuda(), w.cuda()).cpu()
            m = mm(a.cuda(), b.cuda()).cpu()
        results[label] = (rmse(c, conv_ref), rmse(m, mm_ref))
        print(f"{label:<22} conv RMSE to fp64 {results[label][0]:.3e}   matmul RMSE to fp64 {results[label][1]:.3e}")
    print("restored:", torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    # TF32 keeps 10 mantissa bits where fp32 keeps 23: its error is hundreds of times fp32's.
    fp32_mm, fp32_conv = results["defaults"][1], results["tf32 off"][0]
    checks = {
        "matmul precision high uses TF32": results["matmul_precision=high"][1] > 10 * fp32_mm,
        "tf32 off keeps the matmul fp32 at high": results["high + tf32 off"][1] < 2 * fp32_mm,
        "cuDNN's default conv uses TF32": results["defaults"][0] > 10 * fp32_conv,
        "the settings are restored": torch.get_float32_matmul_precision() == "highest" and torch.backends.cudnn.allow_tf32,
    }
    for what, ok in checks.items():
        print(f"{what}: {'ok' if ok else 'WRONG'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
