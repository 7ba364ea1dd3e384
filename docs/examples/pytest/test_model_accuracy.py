"""The compiled model must agree with eager, fp64 as referee (pt2diff.testing.assert_agrees). On failure
the test prints the op that diverges, its source line, the hint and the numbers.

    pytest docs/examples/pytest                                       # Inductor on CPU
    PT2DIFF_DEVICE=cuda pytest docs/examples/pytest                   # the model and inputs on a GPU
    PT2DIFF_COMPILED=fault:linear:scale=0.05 pytest docs/examples/pytest   # what a failure looks like

PT2DIFF_COMPILED picks the compiled side (default: Inductor); "fault:linear:scale=0.05" plants a wrong
result in the first linear layer, without a compiler. PT2DIFF_DEVICE is where the model and its inputs live
("cpu" by default): pt2diff runs where they are.
"""

import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import pt2diff
from pt2diff.testing import assert_agrees

COMPILED = os.environ.get("PT2DIFF_COMPILED", "inductor")
DEVICE = os.environ.get("PT2DIFF_DEVICE", "cpu")


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@pytest.fixture
def model_and_inputs():
    torch.manual_seed(0)
    return TinyMLP().to(DEVICE).eval(), (torch.randn(8, 32, device=DEVICE),)


def test_module_compiles_faithfully(model_and_inputs, tmp_path):
    # The nn.Module is exported with its inputs, then diffed in memory: no archive, no inputs file.
    # repro=: when a culprit is named, it is written there and the failure gives the command to rerun it.
    model, inputs = model_and_inputs
    assert_agrees(model, inputs, compiled=COMPILED, repro=tmp_path)


def test_exported_program_on_random_inputs(model_and_inputs):
    # An ExportedProgram, judged on inputs drawn from the graph's own shapes and dtypes (seeded).
    model, inputs = model_and_inputs
    ep = torch.export.export(model, inputs)
    result = assert_agrees(ep, random_inputs=True, seed=1, compiled=COMPILED)
    assert result.verdict == "agree"
    assert all(o["pass"] for o in result.outputs)
    assert result.devices.native.startswith(DEVICE)  # the runs were where the model lives


def test_errors_are_exceptions(model_and_inputs):
    # Inputs that do not match the graph: the CLI's line, as an exception (assert_agrees fails with it).
    model, inputs = model_and_inputs
    with pytest.raises(pt2diff.BadInputsError, match=r"input 'x' has shape \[8, 31\], the graph expects float32\[8, 32\]"):
        pt2diff.diff(torch.export.export(model, inputs), (torch.randn(8, 31, device=DEVICE),), compiled=COMPILED)
