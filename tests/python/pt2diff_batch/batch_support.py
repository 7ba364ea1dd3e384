"""Shared by the batch tests (tests/python/pt2diff_batch/test_batch_*.py): the repo's python/ on sys.path, running
`pt2diff batch`, a capture directory made from a small program with graph breaks. Imported after the test has put
tests/ on sys.path (for cli_case)."""
import json
import os
import subprocess
import sys
import tempfile

from cli_case import ROOT

BROKEN_WORKER = os.path.join(ROOT, "tests", "engine", "backends", "broken_worker.py")
sys.path.insert(0, os.path.join(ROOT, "python"))

from pt2diff_batch import summary as summary_mod  # noqa: E402


def batch(pt2diff, *args, **kwargs):
    """`pt2diff batch ARGS` (progress off: not a tty): the completed process."""
    return subprocess.run([pt2diff, "batch", *args], capture_output=True, text=True, **kwargs)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def comparable(doc):
    return summary_mod.comparable(doc)


def runs(out, key):
    """How many times case `key` of batch `out` was started (lines of its runs.jsonl)."""
    try:
        with open(os.path.join(out, "cases", key, "runs.jsonl")) as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def inputs_of(fixtures, name):
    """The inputs of fixture NAME (those of NAME without its _core suffix)."""
    base = name[:-len("_core")] if name.endswith("_core") else name
    return os.path.join(fixtures, base + "_inputs.pt")


def make_capture(out):
    """A capture directory from a program with two graph breaks: three graphs in out/index.json."""
    import torch
    import torch.nn as nn
    import pt2diff_capture

    class TwoBreaks(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 8)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            print("graph break")
            h = h.to(torch.bfloat16) * 2
            torch._dynamo.graph_break()
            return self.fc2(h.float()).softmax(-1)

    torch.manual_seed(0)
    torch._dynamo.reset()
    model = torch.compile(TwoBreaks().eval(), backend=pt2diff_capture.capture_backend(out, quiet=True))
    with torch.no_grad():
        model(torch.randn(4, 16))
    return read_json(os.path.join(out, "index.json"))["graphs"]


def ray_temp_dir():
    """A short directory for Ray's session files (`ray.init(_temp_dir=...)`), for the caller to remove: Ray puts its
    AF_UNIX sockets there, whose paths must fit in 107 bytes, which a directory under a long TMPDIR does not
    leave room for ("validate_socket_filepath")."""
    return tempfile.mkdtemp(prefix="ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
