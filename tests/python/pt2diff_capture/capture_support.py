"""Shared by the capture tests (tests/python/pt2diff_capture): the repo's python/ on sys.path, running pt2diff and
the capture CLI. Imported after the test has put tests/ on sys.path (for cli_case)."""
import os
import subprocess
import sys

import torch

from cli_case import ROOT

PYTHON_DIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYTHON_DIR)  # works from a fresh clone, before scripts/setup.sh installs the package


def pt2diff_eager(binary, archive, inputs, outputs):
    """`pt2diff ARCHIVE INPUTS --compiled eager --save-outputs OUTPUTS`: (process, eager outputs or None)."""
    run = subprocess.run([binary, archive, inputs, "--compiled", "eager", "--save-outputs", outputs],
                         capture_output=True, text=True)
    eager = torch.load(outputs, weights_only=True)[1] if run.returncode == 0 else None
    return run, eager


def capture_cli(*args, cwd=None):
    """`python -m pt2diff_capture ARGS` with the repo's python/ on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "pt2diff_capture", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
