#!/usr/bin/env python3
"""pt2diff's Inductor worker: compiles regions of a torch.export archive with Inductor and runs them.

The launcher pt2diff runs: the worker is the package pt2diff_worker, found next to this file once
installed (share/pt2diff/pt2diff_worker) or in the source tree's python/. docs/worker-protocol.md.

    python inductor_worker.py [--cache-dir DIR]
"""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
for _dir in (_here, os.path.join(_here, "..", "..", "python")):
    if os.path.isfile(os.path.join(_dir, "pt2diff_worker", "__init__.py")):
        sys.path.insert(0, os.path.normpath(_dir))
        break


def __getattr__(name):  # `from inductor_worker import Worker` (torch_settings, ...): the package's names
    import pt2diff_worker
    return getattr(pt2diff_worker, name)


if __name__ == "__main__":
    import pt2diff_worker
    pt2diff_worker.main()
