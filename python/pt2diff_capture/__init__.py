"""Get torch.export archives and their inputs out of real PyTorch programs, for pt2diff (docs/capture.md).

    torch.compile(model, backend=pt2diff_capture.capture_backend("captured"))   # every Dynamo graph
    pt2diff_capture.export_module(model, (x,), out="model")                    # model.pt2 + model_inputs.pt
    pt2diff_capture.export_training_step(model, (x,), loss_fn, targets=(y,))   # step.pt2: loss and gradients
    python -m pt2diff_capture from-repro repro.py --out DIR                     # the accuracy minifier's repro
"""
from .backend import CaptureBackend, capture_backend
from .export import Exported, export_module
from .minifier import Converted, from_repro
from .normalize import CaptureError, normalize, save
from .training import export_training_step, training_program

__all__ = ["CaptureBackend", "CaptureError", "Converted", "Exported", "capture_backend", "export_module",
           "export_training_step", "from_repro", "normalize", "save", "training_program"]
