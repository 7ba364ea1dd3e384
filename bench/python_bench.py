"""What calling pt2diff from Python costs against the CLI, and what keeping things in memory costs.

    PYTHONPATH=BUILD/python python bench/python_bench.py BUILD/pt2diff FIXTURES_DIR  (bench/run.py --sections python)

Prints one JSON object. Per fixture, for `--compiled eager` (and inductor on mlp, warm Inductor cache), the
median of REPEATS after one untimed run:
  cli_s          the CLI's wall time, `pt2diff GRAPH INPUTS --compiled C` (a fresh process: libtorch's start-up included)
  python_files_s pt2diff.diff(path, tensors) in this process, the tensors read with torch.load beforehand
  python_memory_s pt2diff.diff(ExportedProgram, tensors): the program serialized in memory on every call
  save_s         of which torch.export.save into a BytesIO
  load_bytes_s   pt2diff.load of those bytes, against load_path_s, pt2diff.load of the file
  inputs_file_s  reading the inputs file as the CLI does (torch.load here, for comparison with passing tensors)
and import_s, `import pt2diff` in a fresh interpreter (torch's import included), against import_torch_s.
"""
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPEATS = 5
CASES = [("mlp", "mlp.pt2", "mlp_inputs.pt"), ("bf16_block", "bf16_block.pt2", "bf16_block_inputs.pt"),
         ("attention_core", "attention_core.pt2", "attention_inputs.pt")]


def median_time(f, repeats=REPEATS):
    f()  # untimed: warm caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fresh(code):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    cache = tempfile.mkdtemp(prefix="pt2diff-bench-inductor-")  # warm after each case's untimed run
    import torch

    import pt2diff

    out = {"repeats": REPEATS, "cases": {},
           "import_torch_s": statistics.median(fresh("import torch") for _ in range(3)),
           "import_s": statistics.median(fresh("import pt2diff") for _ in range(3))}
    for name, graph, inputs in CASES:
        graph, inputs = os.path.join(fixtures, graph), os.path.join(fixtures, inputs)
        tensors = torch.load(inputs, weights_only=True)
        ep = torch.export.load(graph)
        data = io.BytesIO()
        torch.export.save(ep, data)
        blob = data.getvalue()

        def save():
            torch.export.save(ep, io.BytesIO())

        case = {"save_s": median_time(save),
                "load_bytes_s": median_time(lambda: pt2diff.load(blob)),
                "load_path_s": median_time(lambda: pt2diff.load(graph)),
                "inputs_file_s": median_time(lambda: torch.load(inputs, weights_only=True)),
                "archive_bytes": len(blob)}
        sides = ["eager"] + (["inductor"] if name == "mlp" else [])
        for compiled in sides:
            flags = ["--inductor-cache", cache] if compiled == "inductor" else []
            options = {"inductor_cache": cache} if compiled == "inductor" else {}
            case[compiled] = {
                "cli_s": median_time(lambda: subprocess.run([cli, graph, inputs, "--compiled", compiled, *flags], capture_output=True,
                                                            check=True)),
                "python_files_s": median_time(lambda: pt2diff.diff(graph, tensors, compiled=compiled, **options)),
                "python_memory_s": median_time(lambda: pt2diff.diff(ep, tensors, compiled=compiled, **options))}
        out["cases"][name] = case
    shutil.rmtree(cache, ignore_errors=True)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
