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

    def validate(self, report):
        if self._jsonschema:
            self._jsonschema.validate(report, self._schema)
