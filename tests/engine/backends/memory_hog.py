#!/usr/bin/env python3
"""The memory limit, end to end (issue 34; a ctest, ~10 s): a worker that allocates past --max-memory ends as
out_of_memory, exit 4, one line, and nothing else on the machine is touched.

    memory_hog.py PT2DIFF FIXTURES_DIR

As a worker (`memory_hog.py --worker`, what the check runs as `--compiled external:...`): the shipped Inductor
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
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


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


def expect(ok, what, out=""):
    if not ok:
        print(f"FAILED: {what}\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    bystander = subprocess.Popen([sys.executable, "-c", "import sys, time; b = bytearray(200 << 20); sys.stdin.read(); "
                                  "print(len(b), sum(b[::4096]))"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        r = subprocess.run([pt2diff, os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt"), "--max-memory", "1G",
                            "--compiled", f"external:{sys.executable} {os.path.abspath(__file__)} --worker", "--json", report],
                           capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if l.startswith("pt2diff:")]
        expect(r.returncode == 4, f"a worker allocating past --max-memory: exit 4 (got {r.returncode})", r.stdout + r.stderr)
        expect(len(lines) == 1 and "(out_of_memory)" in lines[0] and "raise --max-memory (now 1.0 GiB per process)" in lines[0]
               and ("can't allocate memory" in lines[0] or "not enough memory" in lines[0]),
               "one line naming out_of_memory, the allocator's message and the remedy",
               r.stderr)
        expect(f"under RLIMIT_DATA {1 << 30}," in lines[0], "the worker ran under RLIMIT_DATA = --max-memory", lines[0])
        with open(report) as f:
            whole = json.load(f)
        compiles = whole["compiles"]
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
        if jsonschema is not None:
            with open(os.path.join(HERE, "..", "..", "..", "docs", "report.schema.json")) as f:
                jsonschema.validate(whole, json.load(f))
            print("ok: the report validates against docs/report.schema.json")
        expect(compiles and compiles[0]["failure"] == "out_of_memory", "the report records the compile as out_of_memory",
               json.dumps(compiles))
    out, _ = bystander.communicate(timeout=60)
    expect(bystander.returncode == 0 and out.split() == [str(200 << 20), "0"], "a process beside it is alive and whole", out)
    print("memory limit: an oversized worker is out_of_memory, exit 4, one line; nothing else touched")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker()
    else:
        sys.exit(main())
