"""What a failing Python test shows: the pt2diff runs it made, their reports, and where all of it is kept.

tests/python/run_tests.py installs this before it runs any test (ctest, scripts/gpu_test.sh and a user's own
``python tests/python/run_tests.py ...`` all go through it). From then on every ``subprocess.run`` of the pt2diff CLI
(``PT2DIFF_CLI`` or any binary named ``pt2diff``) or of a pt2diff Python command (``python -m pt2diff_batch`` /
``pt2diff_capture``) is journaled with the test class and test method that made it, found on the call stack: a run
in ``setUpClass`` belongs to every test of its class, a run in a test method to that test only. The test files run
pt2diff as before; nothing in them changes.

When a test fails (pytest: its report gets a section "pt2diff runs"; unittest: the same text before the failure),
the runs it depends on are listed (command, exit status, time) and the first few shown, failing ones first: the text
report down to its per-node tables (the verdict, outputs, node verdict, kernels, localization and hints) and the tail
of stderr. Their whole output, and the JSON/HTML reports they named (``--json``, ``--html``), are copied to
``$PT2DIFF_TEST_EVIDENCE/<class>.<test>/`` (ctest sets it to ``build/test-evidence``; elsewhere
``$TMPDIR/pt2diff-test-evidence``), a folder no test removes, so the evidence outlives the test's temporary folder.
"""
import inspect
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

#: Lines of a run's stdout (the text report, from its top: the verdict, the outputs, the node verdict, the kernels,
#: the localization and its hints) and of stderr's tail shown in a failure; all of it is in the kept log.
REPORT_LINES, STDERR_TAIL = 60, 12
#: Where the text report's per-node tables begin: a failure shows what comes before (the kept log has them).
NODE_TABLES = ("nodes introducing the most error", "per node, in graph order")
#: Runs shown in full for one failure (the failing ones first, then the latest); the rest are listed by a line.
SHOWN_RUNS = 6

_real_run = subprocess.run
_journal = []  # Run records, in the order they ended


class Run:
    """One pt2diff process a test made."""

    def __init__(self, argv, returncode, stdout, stderr, seconds, owner, test):
        self.argv, self.returncode, self.stdout, self.stderr, self.seconds = argv, returncode, stdout, stderr, seconds
        self.owner = owner  # the TestCase class
        self.test = test  # the test method's name, or None for a run of setUpClass (shared by the class's tests)

    def command(self):
        """The command with each path shortened to its file name (the kept log has it whole)."""
        return " ".join(shlex.quote(os.path.basename(a) if os.sep in a and not a.startswith("external:") else a)
                        for a in self.argv)

    def named_files(self):
        """The reports the command wrote: the values of --json and --html."""
        return [self.argv[i + 1] for i, a in enumerate(self.argv[:-1]) if a in ("--json", "--html")]


def _text(value):
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _is_pt2diff(argv):
    if not argv:
        return False
    first = os.path.basename(str(argv[0]))
    cli = os.environ.get("PT2DIFF_CLI", "")
    if first == "pt2diff" or (cli and str(argv[0]) == cli):
        return True
    return any(str(a) == "-m" and i + 1 < len(argv) and str(argv[i + 1]) in ("pt2diff_batch", "pt2diff_capture")
               for i, a in enumerate(argv))


def _owner():
    """(the TestCase class, the test method's name or None) of the innermost test code on the call stack."""
    frame, found = inspect.currentframe(), None
    while frame is not None:  # a classmethod's run from inside a test method is that test's: the outer frame decides
        local = frame.f_locals
        self, cls = local.get("self"), local.get("cls")
        if isinstance(self, unittest.TestCase):
            return type(self), self._testMethodName
        if found is None and isinstance(cls, type) and issubclass(cls, unittest.TestCase):
            found = cls
        frame = frame.f_back
    return found, None


def _recording_run(*args, **kwargs):
    argv = args[0] if args else kwargs.get("args")
    argv = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in (argv or [])]
    if not _is_pt2diff(argv):
        return _real_run(*args, **kwargs)
    start = time.monotonic()
    try:
        result = _real_run(*args, **kwargs)
    except subprocess.TimeoutExpired as e:
        owner, test = _owner()
        _journal.append(Run(argv, f"timed out after {e.timeout} s", _text(e.stdout), _text(e.stderr),
                            time.monotonic() - start, owner, test))
        raise
    owner, test = _owner()
    _journal.append(Run(argv, result.returncode, _text(result.stdout), _text(result.stderr), time.monotonic() - start,
                        owner, test))
    return result


def install():
    """Journal every pt2diff run from now on (idempotent)."""
    subprocess.run = _recording_run


def runs_of(owner, test):
    """The runs a test may depend on: its class's (of the class or a base of it), those of setUpClass and of the test
    itself first, then those its sibling tests made (a run made on first use by one test is read by the others)."""
    if owner is None:
        return []
    mine = [r for r in _journal if r.owner is not None and issubclass(owner, r.owner)]
    return [r for r in mine if r.test in (None, test)] + [r for r in mine if r.test not in (None, test)]


def report_excerpt(text, n=REPORT_LINES):
    """The text report without its per-node tables, at most n lines, indented; what is left out is said."""
    lines = text.rstrip("\n").splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith(NODE_TABLES)), len(lines))
    shown = lines[:min(cut, n)]
    out = "\n".join("  " + line for line in shown)
    if len(lines) > len(shown):
        out += f"\n  ... {len(lines) - len(shown)} more lines (the per-node tables) in the kept log"
    return out


def _tail(text, n):
    lines = text.rstrip("\n").splitlines()
    return ("  ...\n" if len(lines) > n else "") + "\n".join("  " + line for line in lines[-n:])


def evidence_dir():
    """$PT2DIFF_TEST_EVIDENCE, else $TMPDIR/pt2diff-test-evidence."""
    return os.environ.get("PT2DIFF_TEST_EVIDENCE") or os.path.join(tempfile.gettempdir(), "pt2diff-test-evidence")


def _keep(runs, owner, test):
    """Writes each run's whole output and copies its reports to the evidence folder of this test; its path."""
    folder = os.path.join(evidence_dir(), f"{owner.__qualname__}.{test or 'setUpClass'}")
    try:
        os.makedirs(folder, exist_ok=True)
        for i, r in enumerate(runs, 1):
            with open(os.path.join(folder, f"run{i}.log"), "w") as f:
                f.write(f"$ {shlex.join(r.argv)}\nexit: {r.returncode} after {r.seconds:.1f} s\n\n--- stdout\n{r.stdout}"
                        f"\n--- stderr\n{r.stderr}\n")
            for path in r.named_files():
                if os.path.isfile(path):
                    shutil.copy(path, os.path.join(folder, f"run{i}-{os.path.basename(path)}"))
    except OSError as e:
        return f"(not kept: {e})"
    return folder


def evidence(owner, test):
    """The text a failure of OWNER.TEST shows, or "" when it ran no pt2diff."""
    runs = runs_of(owner, test)
    if not runs:
        return ""
    kept = _keep(runs, owner, test)
    numbered = list(enumerate(runs, 1))
    own = [(i, r) for i, r in numbered if r.test in (None, test)]
    # The test's own runs that failed, its other own runs, then the siblings' failing runs.
    order = ([x for x in own if x[1].returncode != 0] + [x for x in own if x[1].returncode == 0]
             + [x for x in numbered if x not in own and x[1].returncode != 0])
    shown = order[:SHOWN_RUNS]
    out = [f"{len(runs)} pt2diff run(s) this test depends on; each one's whole output and reports are kept in {kept}"]
    for i, r in numbered:
        where = "setUpClass" if r.test is None else r.test
        out.append(f"  run{i}: exit {r.returncode} in {r.seconds:.1f} s ({where}): {r.command()}")
    for i, r in sorted(shown, key=lambda x: x[0]):
        out.append(f"--- run{i}: exit {r.returncode}: {r.command()}")
        if r.stdout.strip():
            out.append(f"stdout (the report):\n{report_excerpt(r.stdout)}")
        if r.stderr.strip():
            out.append(f"stderr, last {STDERR_TAIL} lines:\n{_tail(r.stderr, STDERR_TAIL)}")
    return "\n".join(out)


class PytestPlugin:
    """Adds the section "pt2diff runs" to a failing test's report."""

    def __init__(self):
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            report = outcome.get_result()
            if report.failed and getattr(item, "cls", None) is not None:
                text = evidence(item.cls, item.name if report.when == "call" else None)
                if text:
                    report.sections.append(("pt2diff runs", text))

        self.pytest_runtest_makereport = pytest_runtest_makereport


class UnittestResult(unittest.TextTestResult):
    """unittest's result that prints the evidence of a failure or error before unittest's own account of it."""

    def _show(self, test):
        if isinstance(test, unittest.TestCase):
            text = evidence(type(test), test._testMethodName)
        else:  # an error in setUpClass: "setUpClass (module.Class)"
            name = str(test).rsplit(".", 1)[-1].rstrip(")")
            owners = {r.owner for r in _journal if r.owner is not None and r.owner.__qualname__ == name}
            text = "\n".join(evidence(o, None) for o in owners)
        if text:
            self.stream.write("\n" + text + "\n")
            self.stream.flush()

    def addFailure(self, test, err):
        self._show(test)
        super().addFailure(test, err)

    def addError(self, test, err):
        self._show(test)
        super().addError(test, err)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._show(test)
        super().addSubTest(test, subtest, err)


if __name__ == "__main__":
    sys.exit("evidence.py is a module of tests/python/run_tests.py")
