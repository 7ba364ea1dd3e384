"""What the CLI-driven Python tests share (tests/engine/**/*.py that run pt2diff and read its --json report):
named checks that print "ok" or "FAIL" and are counted, and each report validated against
docs/report.schema.json when jsonschema is installed (a user's own Python need not have it)."""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class Checks:
    """`expect(ok, what)` prints one line per check and remembers the failures; `validate(report)` checks a
    report dict against the schema (nothing without jsonschema)."""

    def __init__(self):
        self.failures = []
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
        self._jsonschema = jsonschema
        self._schema = json.load(open(os.path.join(ROOT, "docs", "report.schema.json"))) if jsonschema else None

    def expect(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def finish(self, passed):
        """The test's exit code: 1 after a line counting the failed checks, else 0 after `passed`, the line ctest's
        PASS_REGULAR_EXPRESSION looks for."""
        if self.failures:
            print(f"{len(self.failures)} check(s) failed")
            return 1
        print(passed)
        return 0

    def validate(self, report):
        if self._jsonschema:
            self._jsonschema.validate(report, self._schema)


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
