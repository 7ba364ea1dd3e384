"""On a CUDA machine: the worker's `settings` really switch TF32 for compiled fp32 convolutions and
matmuls (the tf32_off lever). Part of the GPU suite (scripts/gpu_test.sh runs it by tests/python/run_tests.py);
skipped where torch sees no CUDA device.

For a conv and a matmul compiled by Inductor, the RMSE to an fp64 reference with torch's defaults, with matmul
precision "high", and with settings {"tf32": False} (printed): TF32 shows where it should (matmul at "high", conv
at cuDNN's default), "tf32": False removes it, and the settings are restored after.
"""
import os
import sys
import unittest

# python/ only while importing the tree's packages: its pt2diff has no native module, and a test run beside this one
# imports the built pt2diff from PYTHONPATH.
PACKAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, PACKAGES)
from pt2diff_worker import cli  # noqa: E402

cli.setup_environment(os.path.expanduser(cli.DEFAULT_CACHE_DIR))  # the worker's Inductor cache, before torch
import torch  # noqa: E402
from pt2diff_worker.inductor import torch_settings  # noqa: E402

sys.path.remove(PACKAGES)


def rmse(a, b):
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


class Tf32Settings(unittest.TestCase):
    """A conv and a matmul compiled under each of four settings, in setUpClass; each test checks one property."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not torch.cuda.is_available():
            raise unittest.SkipTest("needs a CUDA device (scripts/gpu_test.sh runs it on a GPU machine)")
        g = torch.Generator().manual_seed(0)
        x, w = torch.randn(8, 64, 32, 32, generator=g), torch.randn(64, 64, 3, 3, generator=g)
        a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
        conv_ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
        mm_ref = a.double() @ b.double()
        cls.results = {}
        for label, settings in (("defaults", {}), ("matmul_precision=high", {"matmul_precision": "high"}),
                                ("tf32 off", {"tf32": False}), ("high + tf32 off", {"matmul_precision": "high", "tf32": False})):
            torch._dynamo.reset()
            conv = torch.compile(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1))
            mm = torch.compile(lambda a, b: a @ b)
            with torch.no_grad(), torch_settings(settings):
                c = conv(x.cuda(), w.cuda()).cpu()
                m = mm(a.cuda(), b.cuda()).cpu()
            cls.results[label] = (rmse(c, conv_ref), rmse(m, mm_ref))
            print(f"{label:<22} conv RMSE to fp64 {cls.results[label][0]:.3e}   matmul RMSE to fp64 {cls.results[label][1]:.3e}")
        cls.restored = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
        print("restored:", *cls.restored)
        # TF32 keeps 10 mantissa bits where fp32 keeps 23: its error is hundreds of times fp32's.
        cls.fp32_mm, cls.fp32_conv = cls.results["defaults"][1], cls.results["tf32 off"][0]

    def test_matmul_precision_high_uses_tf32(self):
        self.assertGreater(self.results["matmul_precision=high"][1], 10 * self.fp32_mm, "matmul precision high uses TF32")

    def test_tf32_off_keeps_the_matmul_fp32_at_high(self):
        self.assertLess(self.results["high + tf32 off"][1], 2 * self.fp32_mm, "tf32 off keeps the matmul fp32 at high")

    def test_cudnn_default_conv_uses_tf32(self):
        self.assertGreater(self.results["defaults"][0], 10 * self.fp32_conv, "cuDNN's default conv uses TF32")

    def test_settings_restored(self):
        """After the four settings, torch's matmul precision and cuDNN's TF32 flag are the defaults again."""
        precision, cudnn_tf32 = self.restored
        self.assertTrue(precision == "highest" and cudnn_tf32, f"the settings are restored ({precision}, {cudnn_tf32})")


if __name__ == "__main__":
    unittest.main()
