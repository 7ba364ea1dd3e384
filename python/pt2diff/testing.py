"""pt2diff inside a pytest (or unittest) suite: a compiled graph must agree with eager, fp64 as referee.

    from pt2diff.testing import assert_agrees

    def test_model_compiles_faithfully():
        assert_agrees(MyModel().eval(), (torch.randn(8, 32),))                 # exported first
        assert_agrees("model.pt2", torch.load("inputs.pt", weights_only=True), tol=1e-4)

The failure message is the one pt2diff/testing.h prints in a GoogleTest suite (results.h:
to_failure_message): each failing output with the rule's numbers, the culprit op with its source line
and module path, the hints, and the repro command when ``repro=DIR`` is given. A file or graph pt2diff
cannot handle fails the assertion with pt2diff's one line ("pt2diff: ..."), as testing.h does.
"""

from __future__ import annotations

import pt2diff


def assert_agrees(program_or_module, inputs=None, **options) -> pt2diff.DiffResult:
    """Runs :func:`pt2diff.diff` and raises AssertionError unless every output agrees and the compiler ran.

    ``program_or_module``: an ``nn.Module`` (exported with ``inputs`` by ``torch.export.export``), a
    ``torch.export.ExportedProgram``, a :class:`pt2diff.Program` or a path to a .pt2 archive. ``inputs``:
    a tensor, a tuple (positional), a dict (by name) or ``(args, kwargs)``; None: the archive's sample
    inputs. ``options``: those of :func:`pt2diff.diff` (``compiled="inductor"`` by default, ``tol``,
    ``rule``, ``repro`` ...). Returns the result when it agrees.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    try:
        result = pt2diff.diff(program_or_module, inputs, **options)
    except pt2diff.Error as e:
        raise AssertionError(f"pt2diff: {e}") from None
    if not result.agrees:
        raise AssertionError(result.failure_message())
    return result
