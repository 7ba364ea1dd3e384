"""Makes this Python a test double of another torch installation, for `pt2diff recheck`'s tests
(tests/engine/upstream/test_recheck_torches.py): a wrapper script puts this folder first on PYTHONPATH and sets
PT2DIFF_TORCH_DOUBLE, and every Python it starts (the version probe, the worker, the compilers' subprocesses)
imports this module first. The torch is the real one; what differs:

- "planted": Inductor's lowering of PT2DIFF_PLANT_OP is wrong (tests/engine/localize/planted_lowering.py), as a
  torch release with a lowering bug would be, with the FX graph and AOTAutograd caches off (their keys do not hold
  the lowering, so a graph compiled by the stock torch must not be reused);
- "load_error": torch.export.load refuses every archive, as a torch older than the archive's schema does;
- "old": torch.__version__ reads PT2DIFF_DOUBLE_VERSION (a release outside the versions pt2diff supports).
Nothing happens without PT2DIFF_TORCH_DOUBLE.
"""
import os
import sys

_kind = os.environ.get("PT2DIFF_TORCH_DOUBLE", "")

if _kind == "planted":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "localize"))
    import planted_lowering  # noqa: E402

    sys.path.pop(0)
    planted_lowering.plant()
    import torch._functorch.config  # noqa: E402
    import torch._inductor.config  # noqa: E402

    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
elif _kind == "load_error":
    import torch.export  # noqa: E402

    def _refuse(*args, **kwargs):
        raise RuntimeError("Serialized schema version 99.0 does not match our current schema version 8.17 (a test double "
                           "of a torch older than the archive)")

    torch.export.load = _refuse
elif _kind == "old":
    import torch  # noqa: E402

    torch.__version__ = os.environ.get("PT2DIFF_DOUBLE_VERSION", "2.9.1")
