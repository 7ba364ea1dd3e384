"""pt2diff's compiler workers in Python (docs/worker-protocol.md).

- `protocol`: the request loop, `serve(handler)`, and `Failure(kind, message)` (needs no torch);
- `regions`: GraphModules cut out of an archive's graph (fused or exploded), CPU math attention;
- `archive`: an archive loaded for a device (`Archive`), the region inputs the engine sends;
- `inductor`: the Inductor worker (`Worker`), `torch_settings`, `config_value`;
- `distinct_ops`: an exploded region's repeated ops compiled once, run once per occurrence;
- `cli`: `main()`, what `python -m pt2diff_worker` and engine/backends/inductor_worker.py run.

Importing the package (or `protocol`, `cli`) imports no torch and changes nothing: torch comes with the
modules that need it, or with the names below that live there, on first use.
"""
from .cli import main
from .protocol import OPS, PROTOCOL, Failure, serve

_LAZY = {"Worker": "inductor", "torch_settings": "inductor", "config_value": "inductor",
         "Archive": "archive", "region_module": "regions"}

__all__ = ["main", "serve", "Failure", "PROTOCOL", "OPS", *_LAZY]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f".{module}", __name__), name)
