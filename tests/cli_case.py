"""What the end-to-end tests of the CLI share: they are unittest TestCases (run under pytest by
tests/python/run_tests.py, one ctest per file, or unittest where the Python has no pytest) that run the pt2diff binary
and read its --json report.

The binary and the fixtures come from the environment, as ctest sets it (tests/CMakeLists.txt, pt2diff_python_test):

    PT2DIFF_CLI=build/engine/cli/pt2diff python tests/python/run_tests.py tests/engine/localize/test_workaround.py

- ``PT2DIFF_CLI``: the pt2diff binary; without it every test of a ``CliTestCase`` is skipped, saying so.
- ``PT2DIFF_FIXTURES``: the fixtures folder (default: the tree's ``fixtures/``).
- ``PT2DIFF_TEST_DEVICE``: ``cpu`` (default) or ``cuda`` (scripts/gpu_test.sh runs some of these tests on a GPU).

A test's expensive run (a compile, a search) is done once, in ``setUpClass`` or on first use (``Runs``), and its test
methods each check one thing of it; ``self.subTest`` names the case where one method checks several. A failing test
prints the pt2diff runs it depends on (each report down to its per-node tables) and keeps them (tests/python/evidence.py).
"""
import json
import os
import shutil
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLI = os.environ.get("PT2DIFF_CLI", "")
FIXTURES = os.environ.get("PT2DIFF_FIXTURES") or os.path.join(ROOT, "fixtures")
DEVICE = os.environ.get("PT2DIFF_TEST_DEVICE", "cpu")


def schema(name="report"):
    """docs/NAME.schema.json as a dict (the engine's schemas are generated from its writers)."""
    with open(os.path.join(ROOT, "docs", name + ".schema.json")) as f:
        return json.load(f)


class CliTestCase(unittest.TestCase):
    """A TestCase with ``cls.cli`` (the binary), ``cls.fixtures``, ``cls.device`` and ``cls.tmp`` (a temporary folder
    of the class, removed after its tests). Subclasses that need more in setUpClass call ``super().setUpClass()``
    first."""

    cli = CLI
    fixtures = FIXTURES
    device = DEVICE

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not CLI:
            raise unittest.SkipTest("PT2DIFF_CLI is not set: the path of the pt2diff binary (ctest sets it)")
        if not os.access(CLI, os.X_OK):
            raise AssertionError(f"PT2DIFF_CLI={CLI} is not an executable: build the CLI (cmake --build build)")
        cls.tmp = tempfile.mkdtemp(prefix="pt2diff-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

    def fixture(self, name):
        """The path of fixtures/NAME."""
        return os.path.join(self.fixtures, name)

    def assertValidReport(self, report, name="report"):
        """The report (a dict) is valid against docs/NAME.schema.json; nothing is checked where jsonschema is
        not installed (a user's own Python need not have it)."""
        try:
            import jsonschema
        except ImportError:
            return
        jsonschema.validate(report, schema(name))


class Runs(dict):
    """A class's expensive runs by key, each made on first use and kept: ``cls.runs = Runs(lambda name:
    cls.run_step(name))``. Tests that read the same run share it, and a test selected alone (a pytest node id, a ctest
    of one method) pays for its own run only, where a dict filled in setUpClass makes every run of the class."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, key):
        value = self[key] = self._make(key)
        return value


#: The measurements of the run, not of the graph: the engine process's memory and the GPU allocator's peak.
MEASURED_DEVICE_FIELDS = ("start_host_bytes", "peak_host_bytes", "peak_gpu_bytes")


def without_measurements(node, top=True):
    """A report (or any part of it) without what differs between two runs of the same job: every key ending in
    "seconds", the memory figures of its `devices` and its `stages` (each stage's time and memory)."""
    if isinstance(node, dict):
        return {k: (without_measurements(v, False) if not (top and k == "devices") else
                    {dk: dv for dk, dv in v.items() if dk not in MEASURED_DEVICE_FIELDS})
                for k, v in node.items() if not k.endswith("seconds") and not (top and k == "stages")}
    if isinstance(node, list):
        return [without_measurements(v, False) for v in node]
    return node
