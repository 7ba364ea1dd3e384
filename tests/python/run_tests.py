#!/usr/bin/env python3
"""Runs the project's Python tests under pytest, as ctest does: the tests of the packages (tests/python, which mirrors
python/: pt2diff, pt2diff_worker, pt2diff_batch) and the end-to-end tests of the CLI beside the C++ tests of what
they check (tests/engine/**/test_*.py, tests/zoo, tests/device; tests/cli_case.py), and those of pt2diff_capture and
pt2diff_batch through the CLI (tests/python/pt2diff_capture, tests/python/pt2diff_batch/test_batch_*.py).

    python tests/python/run_tests.py tests/python/pt2diff_worker [tests/python/pt2diff_batch ...]
    python tests/python/run_tests.py tests/engine/localize/test_workaround.py
    python tests/python/run_tests.py "tests/zoo/test_zoo.py::Planted::test_resnet18_core"   # one test (a node id)

Each argument is a test file, a folder of them, or a pytest node id (FILE::CLASS[::METHOD]). The tests are unittest
TestCases, so a Python without pytest (a user's torch given to scripts/setup.sh --python) runs them with unittest
instead: the same tests, said on the first line. Exit 0 when every test passed, 77 (ctest's SKIP_RETURN_CODE) when
every test was skipped and none failed, else 1 (2: no test named).

A failing test shows the pt2diff runs it depends on (each report down to its per-node tables, the exit status, where
the whole output and the reports are kept): tests/python/evidence.py, installed here before any test runs.
"""
import importlib.util
import os
import sys
import unittest

import evidence  # beside this file (a script's folder is first on sys.path)

SKIPPED = 77


def run_pytest(paths):
    import pytest

    class Outcomes:
        """Counts the tests that ran and those skipped (in their setUpClass too)."""

        def __init__(self):
            self.ran = self.skipped = 0

        def pytest_runtest_logreport(self, report):
            if report.skipped:
                self.skipped += 1
            elif report.when == "call":
                self.ran += 1

    outcomes = Outcomes()
    # No cache folder in the source tree; -rs lists the skipped tests with their reasons.
    rc = int(pytest.main(["-p", "no:cacheprovider", "-rs", "-v", *paths], plugins=[outcomes, evidence.PytestPlugin()]))
    if rc == 0 and outcomes.ran == 0 and outcomes.skipped:
        return SKIPPED
    return rc


def unittest_suite(path):
    """unittest's loading of a folder (discovery), a file, or FILE::CLASS[::METHOD]."""
    path, _, selector = path.partition("::")
    path = os.path.abspath(path)
    loader = unittest.TestLoader()
    if os.path.isdir(path):
        return loader.discover(path, top_level_dir=path)
    folder, name = os.path.split(path)
    sys.path.insert(0, folder)
    module = os.path.splitext(name)[0]
    if selector:
        return loader.loadTestsFromName(module + "." + selector.replace("::", "."))
    return loader.loadTestsFromName(module)


def run_unittest(paths):
    suite = unittest.TestSuite(unittest_suite(p) for p in paths)
    result = unittest.TextTestRunner(verbosity=2, resultclass=evidence.UnittestResult).run(suite)
    if not result.wasSuccessful():
        return 1
    ran = result.testsRun - len(result.skipped)
    return SKIPPED if ran <= 0 and result.skipped else 0


def main(paths):
    if not paths:
        print("run_tests.py: name the test files, folders or node ids to run (tests/python/pt2diff_worker ...)", file=sys.stderr)
        return 2
    evidence.install()
    if importlib.util.find_spec("pytest"):
        print("run_tests.py: pytest", flush=True)
        return run_pytest(paths)
    print("run_tests.py: no pytest in this Python: the same tests under unittest", flush=True)
    return run_unittest(paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
