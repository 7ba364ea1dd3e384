"""The memory limit, end to end (issue 34): a worker that allocates past --max-memory ends as out_of_memory, exit 4,
one line, and nothing else on the machine is touched. A ctest, label engine, ~10 s (tests/cli_case.py says how to run
it alone).

As a worker (`test_memory_hog.py --worker`, what the check runs as `--compiled external:...`): the shipped Inductor
worker whose `compile` first allocates PT2DIFF_HOG_BYTES (default 3 GiB) of float32 with torch, as an
oversized case would; it reports the RLIMIT_DATA it runs under in the failure's message.

Checks: with --max-memory 1G the worker runs under RLIMIT_DATA = 1 GiB, its allocation fails inside it
(torch's "DefaultCPUAllocator: not enough memory"), pt2diff exits 4 with one stderr line naming out_of_memory and
the remedy, the JSON report records the compile as out_of_memory, and a process started beside it (a Python
holding 200 MiB) is alive and whole after it.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from cli_case import CliTestCase  # noqa: E402


def worker():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
    import resource

    from pt2diff_worker import cli, inductor
    from pt2diff_worker.protocol import Failure, describe, failure_kind

    stock = inductor.Worker.compile

    def compile_past_the_limit(self, req):
        import torch
        limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
        try:
            hog = torch.ones(int(os.environ.get("PT2DIFF_HOG_BYTES", 3 << 30)) // 4)
        except Exception as e:  # noqa: BLE001
            raise Failure(failure_kind(e, "compile_failed"), f"under RLIMIT_DATA {limit}, {describe(e)}")
        del hog
        return stock(self, req)

    inductor.Worker.compile = compile_past_the_limit
    cli.main(sys.argv[2:])


class MemoryLimit(CliTestCase):
    """mlp compiled by this file's oversized worker under --max-memory 1G, a process holding 200 MiB beside it."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        bystander = subprocess.Popen([sys.executable, "-c", "import sys, time; b = bytearray(200 << 20); sys.stdin.read(); "
                                      "print(len(b), sum(b[::4096]))"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        cls.addClassCleanup(bystander.kill)
        report = os.path.join(cls.tmp, "r.json")
        hog = f"external:{sys.executable} {os.path.abspath(__file__)} --worker"
        cls.result = subprocess.run([cls.cli, os.path.join(cls.fixtures, "mlp.pt2"), os.path.join(cls.fixtures, "mlp_inputs.pt"),
                                     "--max-memory", "1G", "--compiled", hog, "--json", report], capture_output=True, text=True)
        cls.lines = [line for line in cls.result.stderr.splitlines() if line.startswith("pt2diff:")]
        cls.report = json.load(open(report)) if os.path.exists(report) else None
        cls.bystander_out, _ = bystander.communicate(timeout=60)
        cls.bystander_rc = bystander.returncode

    def test_exit_4(self):
        """A worker allocating past --max-memory: pt2diff exits 4."""
        rc, out, err = self.result.returncode, self.result.stdout, self.result.stderr
        self.assertEqual(rc, 4, f"a worker allocating past --max-memory: exit 4 (got {rc})\n{out}{err}")

    def test_one_line_naming_out_of_memory(self):
        """One stderr line naming out_of_memory, the allocator's message and the remedy."""
        lines = self.lines
        self.assertTrue(len(lines) == 1 and "(out_of_memory)" in lines[0]
                        and "raise --max-memory (now 1.0 GiB per process)" in lines[0]
                        and ("can't allocate memory" in lines[0] or "not enough memory" in lines[0]),
                        "one line naming out_of_memory, the allocator's message and the remedy\n" + self.result.stderr)

    def test_worker_ran_under_the_limit(self):
        """The worker ran under RLIMIT_DATA = --max-memory."""
        line = self.lines[0] if self.lines else ""
        self.assertIn(f"under RLIMIT_DATA {1 << 30},", line,
                      "the worker ran under RLIMIT_DATA = --max-memory\n" + self.result.stderr)

    def test_report_is_valid(self):
        """The report validates against docs/report.schema.json."""
        self.assertIsNotNone(self.report, "no JSON report\n" + self.result.stderr)
        self.assertValidReport(self.report)

    def test_report_records_out_of_memory(self):
        """The report records the compile as out_of_memory."""
        self.assertIsNotNone(self.report, "no JSON report\n" + self.result.stderr)
        compiles = self.report["compiles"]
        self.assertTrue(compiles and compiles[0]["failure"] == "out_of_memory",
                        "the report records the compile as out_of_memory: " + json.dumps(compiles))

    def test_bystander_alive_and_whole(self):
        """A process beside it (a Python holding 200 MiB) is alive and whole after it."""
        self.assertTrue(self.bystander_rc == 0 and self.bystander_out.split() == [str(200 << 20), "0"],
                        f"a process beside it is alive and whole: exit {self.bystander_rc}, {self.bystander_out!r}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker()
    else:
        unittest.main()
