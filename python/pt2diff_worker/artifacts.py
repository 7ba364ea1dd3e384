"""The compiler's own artifacts for a repro window (docs/upstream.md): one Inductor compile of the window with
Inductor's debug trace on (what TORCH_COMPILE_DEBUG=1 writes), its files copied beside the repro, so that the
engineer who takes the bug upstream has the post-grad graph and the generated code of the compile that went wrong.

    files, why_not = artifacts.write(gm, example, out_dir, config={...}, settings={...})
"""
import os
import shutil
import tempfile

import torch

#: What each file of Inductor's debug trace is, in the order a reader wants them.
FILES = (
    ("post_grad_graph", "fx_graph_transformed.py"),  # the graph after Inductor's post-grad passes: what it lowers
    ("output_code", "output_code.py"),               # the generated wrapper and kernels (TORCH_LOGS=output_code)
    ("ir_post_fusion", "ir_post_fusion.txt"),        # the scheduler's nodes after fusion: which ops share a kernel
    ("aot_graph", "fx_graph_readable.py"),           # the aten graph AOTAutograd handed Inductor
    ("runnable", "fx_graph_runnable.py"),            # that graph as a standalone script (the minifier's form)
)


def write(gm, example, out_dir, *, config=None, settings_context=None):
    """Compiles `gm` on `example` with Inductor's debug trace into a scratch directory and copies the trace's files into
    `out_dir`. Returns ([(what, path), ...], "") or ([], why not). The FX graph cache is off for this compile (a cache
    hit writes no trace); the region's Inductor config `config` applies, and `settings_context` (the torch globals it
    was compiled under) wraps the compile."""
    from torch._inductor import config as inductor_config

    if not hasattr(inductor_config, "trace") or not hasattr(inductor_config.trace, "debug_dir"):
        return [], f"torch {torch.__version__} has no Inductor debug trace (config.trace.debug_dir)"
    scratch = tempfile.mkdtemp(prefix="pt2diff-trace-")
    patch = dict(config or {})
    patch.update({"trace.enabled": True, "trace.debug_dir": scratch, "trace.graph_diagram": False, "fx_graph_cache": False})
    try:
        import contextlib

        with inductor_config.patch(patch), torch.no_grad(), (settings_context or contextlib.nullcontext()):
            torch.compile(gm, backend="inductor", fullgraph=True, dynamic=False)(*example)
        traces = sorted(root for root, _, names in os.walk(scratch) if "output_code.py" in names)
        if not traces:
            return [], "Inductor's debug trace wrote no output_code.py for the window"
        os.makedirs(out_dir, exist_ok=True)
        written = []
        for what, name in FILES:
            src = os.path.join(traces[0], name)
            if os.path.exists(src):
                dst = os.path.join(out_dir, name)
                shutil.copyfile(src, dst)
                written.append((what, dst))
        return written, ""
    except Exception as e:  # noqa: BLE001 - any failure of this extra compile is said, never fatal to the repro
        return [], f"the traced compile failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
