#!/usr/bin/env python3
"""pt2diff against PyTorch's accuracy minifier on the same planted Inductor bugs (docs/performance.md), run by hand:

    python bench/minifier_bench.py PT2DIFF [--cases mlp_relu,...] [--timeout 1200] [--no-cache-check]
    python bench/minifier_bench.py --combine A.json B.json [--out OUT]   (runs made apart, as one results file)
    python bench/run.py --render-only        (renders bench/results/minifier.json into docs/performance.md)

Each case is a fixture and a bug planted in Inductor's lowering of one ATen op at one shape
(tests/engine/localize/planted_lowering.py: the result scaled by 1 + 1e-2 inside the generated kernel).
Both tools see the same bug in every process they start: pt2diff's worker is
tests/engine/localize/lowering_bug_worker.py, the minifier's processes get it from
bench/minifier_plant/sitecustomize.py (on PYTHONPATH). Inductor's caches are off on both sides
(TORCHINDUCTOR_FORCE_DISABLE_CACHES=1): a cache hit skips the minifier's accuracy check.

- The minifier: `torch.compile(torch.export.load(G).module())(*inputs)` under torch.no_grad() (the
  inference graph pt2diff's worker compiles too) with TORCHDYNAMO_REPRO_AFTER=aot,
  TORCHDYNAMO_REPRO_LEVEL=4 and a fresh TORCH_COMPILE_DEBUG_DIR (its accuracy check fails and it writes
  minifier_launcher.py), then `python minifier_launcher.py minify` (its default: every candidate graph
  checked in a fresh process). Wall time of each phase, Inductor compiles (counted by the patch in every
  process: GraphLowering.compile_to_module), the minifier's queries, and the ATen ops left in the
  minified repro.py.
- pt2diff: `PT2DIFF G I --compiled "external:PYTHON lowering_bug_worker.py" --json R`: wall time, its
  compiles (the graph, the exploded graph, localization), the culprit, and the kernel table's first
  failing kernel (from the graph's compile: no extra compile).
- Training steps (TRAINING_CASES, docs/training.md): the minifier on the model trained one step under
  torch.compile (loss.backward(): AOTAutograd's forward and backward graphs, each checked at level 4),
  pt2diff on the step's archive (fixtures/training); the bug is planted in an op of the backward only.
- Whether the accuracy check fires with Inductor's caches on (a fresh cache dir, compiled twice: cold,
  then warm), on the first case only.

Writes bench/results/minifier.json (bench/run.py's results format: its section `minifier` renders it).

    python bench/minifier_bench.py PT2DIFF --device cuda [--cases decoder_mul,encoder_relu] [--timeout 200]

On a CUDA machine (issue 33: the minifier where the bugs live): graphs of 150+ nodes exported on the GPU by
bench/gpu_bench.py (its 4-layer bf16 decoder and bf16 nn.TransformerEncoder), each with a bug planted in the
lowering of one pointwise op inside a Triton kernel (GPU_CASES), both tools compiling for cuda (pt2diff with
`--device cuda`, the minifier on the inputs moved to cuda). Writes bench/results/minifier_gpu.json (section
`minifier_gpu`). The cases' archives are made in a temporary folder at the start (seconds each).
"""
import argparse
import datetime
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLANT_DIR = os.path.join(ROOT, "bench", "minifier_plant")
WORKER = os.path.join(ROOT, "tests", "engine", "localize", "lowering_bug_worker.py")
RESULT = os.path.join(ROOT, "bench", "results", "minifier.json")
GPU_RESULT = os.path.join(ROOT, "bench", "results", "minifier_gpu.json")

#: name → (graph, inputs, op, shape, what it is)
CASES = {
    "mlp_relu": ("mlp.pt2", "mlp_inputs.pt", "relu", "4,64", "relu between the two linears"),
    "ln_softmax_gelu_div": ("ln_softmax_gelu_core.pt2", "ln_softmax_gelu_inputs.pt", "div.Tensor", "4,48",
                            "div at [4, 48]: h / temperature and softmax's own division, one fused kernel with layer norm and gelu"),
    "attention_add": ("attention_core.pt2", "attention_inputs.pt", "add.Tensor", "2,8,32",
                      "add at [2, 8, 32]: the output projection's bias added after its bmm (the mask's add at [2, 4, 8, 8]"
                      " never reaches add's lowering)"),
}

#: Training steps (docs/training.md): the fixture's model trained one step under torch.compile (forward, loss,
#: loss.backward()) for the minifier, its training-step archive (fixtures/training) for pt2diff. mm at [16, 8] is
#: fc1's weight gradient: an op of the backward graph only (the forward's linears are addmm).
TRAINING_CASES = {
    "mlp_ln_step_mm": "mlp_ln",
    "mlp_ln_step_mm_x2": "mlp_ln",
}
CASES.update({
    "mlp_ln_step_mm": ("training/mlp_ln.pt2", "training/mlp_ln_inputs.pt", "mm", "16,8",
                       "a training step's backward: mm at [16, 8], the gradient of fc1's weight"),
    "mlp_ln_step_mm_x2": ("training/mlp_ln.pt2", "training/mlp_ln_inputs.pt", "mm", "16,8",
                          "a training step's backward: mm at [16, 8], the gradient of fc1's weight, doubled"),
})

#: --device cuda: name → (bench/gpu_bench.py's model, op, shape, error, what). The error is 10%, not 1%: in these
#: bf16 graphs 1% in one op is within what the minifier's accuracy check lets through, and a bug it does not
#: detect gives it nothing to minify.
GPU_CASES = {
    "decoder_rsqrt": ("decoder", "rsqrt", "1,512,1", "0.1",
                      "rsqrt at [1, 512, 1]: RMSNorm's, twice in each of the 4 layers and once before the head, fused into a generated "
                      "kernel (Triton on cuda) with the norm's reduction"),
    "encoder_relu": ("encoder", "relu", "", "0.1",
                     "relu at every shape: the feed-forward's activation in each of the 4 layers, fused into a generated kernel (Triton on cuda)"),
}

#: the archive and inputs of each case: fixtures on the CPU, exported archives (export_gpu_cases) on the GPU
FILES = {case: (os.path.join(ROOT, "fixtures", g), os.path.join(ROOT, "fixtures", i)) for case, (g, i, *_) in CASES.items()}


def export_gpu_cases(cases, tmp, device):
    """Exports each of `cases` that is a GPU case's model once, on `device` (bench/gpu_bench.py's
    export_limit_model), into `tmp`; fills FILES, CASES (the graph named by its model) and ERRORS."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gpu_bench
    made = {}
    for case in (c for c in cases if c in GPU_CASES):
        model, op, shape, error, what = GPU_CASES[case]
        if model not in made:
            graph, inputs, nodes, _ = gpu_bench.export_limit_model(model, tmp, device)
            made[model] = (graph, inputs, nodes)
        graph, inputs, nodes = made[model]
        FILES[case] = (graph, inputs)
        label = f"{model} ({nodes} nodes, bf16, exported on {device})"
        CASES[case] = (label, os.path.basename(inputs), op, shape, f"{what}; the result scaled by 1 + {error}")
        ERRORS[case] = error


#: the planted error per case (PT2DIFF_PLANT_ERROR), where not the default 1e-2
ERRORS = {"mlp_ln_step_mm_x2": "1.0"}


# --- the child: one compile of the model under the minifier's settings ----------------------------------
def compile_model(graph, inputs, device="cpu"):
    """Runs torch.compile on the archive's module with the sample inputs on `device` (in a child with the
    minifier's environment); prints one JSON line: did the accuracy check fail."""
    import torch
    from torch._dynamo.debug_utils import AccuracyError

    ep = torch.export.load(graph)
    mod = ep.module()
    x = torch.load(inputs, weights_only=True)
    x = {k: v.to(device) for k, v in x.items()} if isinstance(x, dict) else tuple(v.to(device) for v in x)
    if isinstance(x, dict):  # every user input by name: the program's call spec says which are keywords
        spec = ep.call_spec.in_spec
        keywords = list((spec.child(1) if hasattr(spec, "child") else spec.children_specs[1]).context)
        args, kwargs = tuple(v for k, v in x.items() if k not in keywords), {k: x[k] for k in keywords}
    else:
        args, kwargs = tuple(x), {}
    try:
        with torch.no_grad():  # the inference graph, as pt2diff's worker compiles it (with grad: AOTAutograd's forward)
            torch.compile(mod)(*args, **kwargs)
        print(json.dumps({"accuracy_failed": False}))
    except AccuracyError as e:
        print(json.dumps({"accuracy_failed": True, "error": str(e)[:200]}))


def compile_step(name, device="cpu"):
    """One training step of fixtures/training/NAME's model (fixtures/make_training_fixtures.py, the archive's
    weights) under torch.compile: forward, loss, loss.backward() (in a child with the minifier's environment);
    prints one JSON line: did the accuracy check fail."""
    import torch
    from torch._dynamo.debug_utils import AccuracyError

    sys.path.insert(0, os.path.join(ROOT, "fixtures"))
    import make_training_fixtures as m
    ep = torch.export.load(os.path.join(ROOT, "fixtures", "training", name + ".pt2"))
    inputs = torch.load(os.path.join(ROOT, "fixtures", "training", name + "_inputs.pt"), weights_only=True)
    model, _, loss_fn, _ = m.cases()[name]()
    model.load_state_dict(ep.state_dict, strict=False)  # the archive also holds non-persistent buffers
    model = model.to(device).train()
    x, target = (v.to(device) for v in inputs)
    try:
        loss_fn(torch.compile(model)(x), target).backward()
        print(json.dumps({"accuracy_failed": False}))
    except AccuracyError as e:
        print(json.dumps({"accuracy_failed": True, "error": str(e)[:200]}))


# --- the parent ---------------------------------------------------------------------------------------
def events(log, kind):
    """The log's lines of one kind ("compile" or "planted"), each as its fields without the pid."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.split()[1:-1] for line in f if line.split()[0] == kind]


def count(log, kind):
    return len(events(log, kind))


def compile_sizes(log, skip=0):
    """The call_function node count of each compile in the log after the first `skip`."""
    return [int(e[0]) for e in events(log, "compile")[skip:] if e]


def run(argv, env, cwd, timeout):
    """Runs argv in its own session; returns (exit code or "timeout", wall seconds, stdout, stderr). On the
    timeout the whole session is killed: the minifier's isolated checks are its children."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err, text=True, start_new_session=True)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            code = "timeout"
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return code, wall, out.read(), err.read()


def aten_ops(repro):
    """The ATen ops called in the minified repro's forward, in order, with their counts."""
    with open(repro) as f:
        text = f.read()
    body = text[text.index("def forward"):text.index("def load_args")] if "def forward" in text and "def load_args" in text else text
    ops = {}
    for m in re.finditer(r"torch\.ops\.aten\.(\w+)\.(\w+)\(", body):
        name = f"aten.{m.group(1)}.{m.group(2)}"
        ops[name] = ops.get(name, 0) + 1
    return ops


def plant_env(case, log, extra=None):
    _, _, op, shape, _ = CASES[case]
    env = {**os.environ, "PT2DIFF_PLANT_OP": op, "PT2DIFF_PLANT_SHAPE": shape, "PT2DIFF_PLANT_ERROR": ERRORS.get(case, "1e-2"),
           "PT2DIFF_PLANT_LOG": log}
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env


def minifier(case, python, timeout, tmp, device):
    graph, inputs = FILES[case]
    work = os.path.join(tmp, f"minifier-{case}")
    os.makedirs(work)
    log = os.path.join(work, "plant.log")
    env = plant_env(case, log, {"PYTHONPATH": PLANT_DIR, "TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "4",
                                "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TORCH_COMPILE_DEBUG_DIR": os.path.join(work, "debug")})
    res = {}
    argv = [python, os.path.abspath(__file__), "--compile-model", graph, inputs, device]
    if case in TRAINING_CASES:
        argv = [python, os.path.abspath(__file__), "--compile-step", TRAINING_CASES[case], device]
    code, wall, out, err = run(argv, env, work, timeout)
    line = next((l for l in reversed(out.splitlines()) if l.startswith("{")), None)
    res["detect"] = {"exit": code, "wall_s": wall, "compiles": count(log, "compile"), "compile_nodes": compile_sizes(log),
                     "planted": count(log, "planted"),
                     "accuracy_failed": json.loads(line)["accuracy_failed"] if line else None,
                     # dynamo's same() passes a comparison whose float64 reference has a NaN (it warns so)
                     "nan_in_reference": "Found nan in reference" in err}
    print(f"  {case}: minifier detect {wall:.1f} s, accuracy failed: {res['detect']['accuracy_failed']}, "
          f"{res['detect']['compiles']} compiles", file=sys.stderr, flush=True)
    launchers = glob.glob(os.path.join(work, "debug", "**", "minifier_launcher.py"), recursive=True)
    if not launchers:
        res["detect"]["stderr_tail"] = err[-2000:]
        return res
    launcher = launchers[0]
    before = count(log, "compile")
    left = max(1, timeout - wall)
    code, wall2, out, err = run([python, launcher, "minify"], env, os.path.dirname(launcher), left)
    queries = re.findall(r"Made (\d+) queries", out + err)
    repro = os.path.join(os.path.dirname(launcher), "repro.py")
    res["minify"] = {"exit": code, "wall_s": wall2, "compiles": count(log, "compile") - before, "compile_nodes": compile_sizes(log, before),
                     "queries": int(queries[-1]) if queries else None, "timed_out": code == "timeout", "timeout_s": timeout}
    if os.path.exists(repro) and code in (0, "timeout"):  # on a timeout: the smallest failing graph it had reached
        res["minify"]["ops"] = aten_ops(repro)
    res["minify"]["progress"] = [[int(a), int(b)] for a, b in re.findall(r"Went from (\d+) to (\d+) nodes", out + err)]
    if code != 0:
        res["minify"]["stderr_tail"] = err[-2000:]
    print(f"  {case}: minifier minify {wall2:.1f} s, exit {code}, {res['minify']['compiles']} compiles, "
          f"{res['minify']['queries']} queries, ops {res['minify'].get('ops')}", file=sys.stderr, flush=True)
    return res


def pt2diff(case, cli, python, tmp, device):
    graph, inputs = FILES[case]
    work = os.path.join(tmp, f"pt2diff-{case}")
    os.makedirs(work)
    log, out = os.path.join(work, "plant.log"), os.path.join(work, "r.json")
    env = plant_env(case, log, {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
    argv = [cli, graph, inputs, "--compiled", f"external:{python} {WORKER}", "--json", out] + (
        ["--device", device] if device != "cpu" else [])
    code, wall, _, err = run(argv, env, ROOT, 3600)
    res = {"exit": code, "wall_s": wall, "inductor_compiles": count(log, "compile"), "compile_nodes": compile_sizes(log)}
    if not os.path.exists(out):
        res["stderr_tail"] = err[-2000:]
        return res
    r = json.load(open(out))
    loc = r.get("localization") or {}
    culprit = loc.get("culprit") or {}
    table = r.get("kernels") or {}
    first = table.get("first_failing")
    k = table["kernels"][first] if first is not None else None
    res.update({"verdict": r.get("verdict"), "seconds": r.get("seconds"),
                "compiles": [{"what": c.get("what"), "compile_s": c.get("compile_seconds")} for c in r.get("compiles", [])],
                "localization_compiles": loc.get("compiles"), "culprit_nodes": culprit.get("nodes"), "culprit_ops": culprit.get("ops"),
                "first_failing_kernel": {"name": k["name"], "nodes": k["nodes"], "first_failing_node": table.get("first_failing_node"),
                                         "kernels": len(table["kernels"])} if k else None})
    print(f"  {case}: pt2diff {wall:.1f} s, {len(res['compiles'])} compiles, culprit {res['culprit_nodes']} {res['culprit_ops']}, "
          f"first failing kernel {res['first_failing_kernel']}", file=sys.stderr, flush=True)
    return res


def cache_check(case, python, tmp, device):
    """The accuracy check with Inductor's caches on: a fresh cache dir, the model compiled twice."""
    graph, inputs = FILES[case]
    work = os.path.join(tmp, f"cache-{case}")
    os.makedirs(work)
    log = os.path.join(work, "plant.log")
    runs_ = []
    for i in range(2):
        debug = os.path.join(work, f"debug{i}")
        env = plant_env(case, log, {"PYTHONPATH": PLANT_DIR, "TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "4",
                                    "TORCHINDUCTOR_CACHE_DIR": os.path.join(work, "inductor-cache"), "TORCH_COMPILE_DEBUG_DIR": debug})
        env.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
        before = count(log, "compile")
        argv = [python, os.path.abspath(__file__), "--compile-model", graph, inputs, device]
        code, wall, out, _ = run(argv, env, work, 1800)
        line = next((l for l in reversed(out.splitlines()) if l.startswith("{")), None)
        runs_.append({"cache": "cold" if i == 0 else "warm", "wall_s": wall, "compiles": count(log, "compile") - before,
                      "accuracy_failed": json.loads(line)["accuracy_failed"] if line else None,
                      "launcher_written": bool(glob.glob(os.path.join(debug, "**", "minifier_launcher.py"), recursive=True))})
        print(f"  cache check {case} {runs_[-1]}", file=sys.stderr, flush=True)
    return {"case": case, "runs": runs_}


def machine(python, device):
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
    if device == "cuda":
        gpu = subprocess.run([python, "-c", "import torch; print(torch.cuda.get_device_name())"], capture_output=True, text=True)
        model = f"{gpu.stdout.strip() or 'a CUDA GPU'} with {model}"
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20), "compiler": cxx[0] if cxx else "unknown"}


def merge(old, new):
    """Results of two runs as one: new's cases replace old's of the same name, commands and commits kept."""
    ran = {r["case"] for r in new["data"]["cases"]}
    rows = [r for r in old["data"]["cases"] if r["case"] not in ran] + new["data"]["cases"]
    rows.sort(key=lambda r: list(CASES).index(r["case"]) if r["case"] in CASES else len(CASES))
    commits = old["commit"].split(", ")
    commits += [c for c in new["commit"].split(", ") if c not in commits]
    dates = sorted(set(old["date"].split(", ") + new["date"].split(", ")))
    return {**new, "commit": ", ".join(commits), "date": ", ".join(dates), "commands": old["commands"] + new["commands"],
            "data": {"cases": rows, "cache_check": new["data"].get("cache_check") or old["data"].get("cache_check")}}


def write(path, res):
    with open(path, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(path)}; render with: python bench/run.py --render-only", file=sys.stderr)


def combine(paths, out):
    """`--combine A.json B.json ... [--out OUT]`: results of runs made separately (concurrently) as one file."""
    res = None
    for path in paths:
        with open(path) as f:
            res = json.load(f) if res is None else merge(res, json.load(f))
    write(out, res)
    return 0


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--compile-model":
        return compile_model(*sys.argv[2:])
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--compile-step":
        return compile_step(*sys.argv[2:])
    if len(sys.argv) > 2 and sys.argv[1] == "--combine":
        files = sys.argv[2:]
        out = RESULT
        if "--out" in files:
            i = files.index("--out")
            out, files = files[i + 1], files[:i] + files[i + 2:]
        return combine(files, out)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff", help="the pt2diff CLI")
    ap.add_argument("--python", default=sys.executable, help="the venv's Python (default: this one)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where both tools compile and run; the default cases: the fixtures' (cpu), GPU_CASES (cuda)")
    ap.add_argument("--cases", help=f"comma-separated, of {', '.join(CASES)} (fixtures) and {', '.join(GPU_CASES)} "
                                    "(exported first, on the device)")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds for the minifier's two phases together (default 1200)")
    ap.add_argument("--no-cache-check", action="store_true", help="skip the caches-on check of the accuracy check")
    ap.add_argument("--out", help="the results file (default bench/results/minifier.json, minifier_gpu.json with --device cuda)")
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile, for the caption")
    ap.add_argument("--merge", action="store_true", help="keep the other cases (and the cache check, if not run) of an existing results file")
    a = ap.parse_args()
    cases = [c for c in (a.cases or ",".join(GPU_CASES if a.device == "cuda" else CASES)).split(",") if c]
    unknown = [c for c in cases if c not in CASES and c not in GPU_CASES]
    if unknown:
        sys.exit(f"minifier_bench.py: unknown case(s) {', '.join(unknown)}; known: {', '.join([*CASES, *GPU_CASES])}")
    out_path = a.out or (GPU_RESULT if a.device == "cuda" else RESULT)
    if not os.access(a.pt2diff, os.X_OK):
        sys.exit(f"minifier_bench.py: {a.pt2diff} is not an executable pt2diff CLI; pass the built one (build/pt2diff)")
    tmp = tempfile.mkdtemp(prefix="pt2diff-minifier-bench-")
    rows = []
    try:
        export_gpu_cases(cases, tmp, a.device)
        for case in cases:
            graph, inputs, op, shape, what = CASES[case]
            print(f"==> {case}", file=sys.stderr, flush=True)
            rows.append({"case": case, "graph": graph, "inputs": inputs, "op": op, "shape": shape, "what": what,
                         "error": float(ERRORS.get(case, "1e-2")), "device": a.device,
                         "pt2diff": pt2diff(case, a.pt2diff, a.python, tmp, a.device),
                         "minifier": minifier(case, a.python, a.timeout, tmp, a.device)})
            # each case as it comes: a device's time limit keeps what finished
            write(out_path + ".partial", {"section": os.path.basename(out_path)[:-5], "data": {"cases": rows, "cache_check": None}})
        cache = None if a.no_cache_check else cache_check(cases[0], a.python, tmp, a.device)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    argv = ["python", "bench/minifier_bench.py", "build/pt2diff", "--cases", ",".join(cases), "--timeout", str(a.timeout)] + (
        ["--device", a.device] if a.device != "cpu" else [])
    if a.no_cache_check:
        argv.append("--no-cache-check")
    if a.merge:
        argv.append("--merge")
    commands = [{"argv": argv, "note": a.note}]
    measured = (rev or "unknown") + ("-dirty" if dirty else "")
    res = {"section": "minifier_gpu" if a.device == "cuda" else "minifier", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "commit": measured, "runner": "bench/minifier_bench.py", "machine": machine(a.python, a.device),
           "torch": torch_version, "commands": commands, "data": {"cases": rows, "cache_check": cache}}
    if a.merge and os.path.exists(out_path):
        with open(out_path) as f:
            res = merge(json.load(f), res)
    write(out_path, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
