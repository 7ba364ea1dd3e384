#!/usr/bin/env python3
"""Runs Python test files or folders of tests/python (which mirrors the packages of python/: pt2diff, pt2diff_worker,
pt2diff_batch) under pytest, as ctest does:

    python tests/python/run_tests.py tests/python/pt2diff_worker [tests/python/pt2diff_batch ...]
    python tests/python/run_tests.py tests/python/pt2diff/test_module.py

The tests are unittest TestCases, so a Python without pytest (a user's torch given to scripts/setup.sh --python)
runs them with unittest instead: the same tests, said on the first line. Exit 0 when every test passed.
"""
import importlib.util
import os
import subprocess
import sys


def unittest_command(path):
    """unittest's discovery of a folder, or of one file (its folder, the file's name as the pattern)."""
    if os.path.isdir(path):
        return [sys.executable, "-m", "unittest", "discover", "-s", path, "-t", path, "-v"]
    folder, name = os.path.split(os.path.abspath(path))
    return [sys.executable, "-m", "unittest", "discover", "-s", folder, "-t", folder, "-p", name, "-v"]


def main(paths):
    if not paths:
        print("run_tests.py: name the test files or folders to run (tests/python/pt2diff_worker ...)", file=sys.stderr)
        return 2
    if importlib.util.find_spec("pytest"):
        print("run_tests.py: pytest", flush=True)
        # No cache folder in the source tree; -rs lists the skipped tests with their reasons.
        return subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-v", *paths])
    print("run_tests.py: no pytest in this Python: the same tests under unittest", flush=True)
    return max(subprocess.call(unittest_command(p)) for p in paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
