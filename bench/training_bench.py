#!/usr/bin/env python3
"""What a training-step diff costs against what the user's own step costs (docs/performance.md, docs/training.md),
run by hand:

    python bench/training_bench.py PT2DIFF [--steps mlp_ln,convbn,llama_bf16] [--note TEXT] [--result training]
    python bench/run.py --render-only        (renders bench/results/training.json into docs/performance.md)

`--result training_many_cpus` on a machine with 4 or more CPUs, where pt2diff overlaps its compiles (--overlap auto:
the exploded compile on a second worker beside the step's compile); `--warm-up` first runs one step of each kind
unmeasured, so that what a machine builds once (Inductor's precompiled header, pt2diff's cache of the vector-ISA
probes) is there for both sides, as on a machine that has compiled before.

For each step of fixtures/training (the model of fixtures/make_training_fixtures.py with the archive's weights):
- eager: one training step in PyTorch eager (forward, loss, loss.backward()), the median of 5 after one warm-up;
- cold compile: the first step under torch.compile (Dynamo, AOTAutograd's forward and backward, Inductor for both)
  in a fresh process with a fresh Inductor cache, timed inside the process (imports excluded): what the user pays
  once;
- pt2diff: `PT2DIFF STEP.pt2 STEP_inputs.pt --inductor-cache FRESH` wall time (FRESH holds only the precompiled
  header and the vector-ISA probes, which the user's process also finds built: seed_cache) (its worker's start, the step's
  compile as torch.compile compiles it, the exploded compile, the fp64 and eager runs, the node verdict), and the
  report's own seconds;
- the ratio pt2diff / (eager + cold compile); the target is at most 1.5.

Writes bench/results/training.json (bench/run.py's results format, section `training`).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minifier_bench  # noqa: E402  (its machine(): the results' caption)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = ["mlp_ln", "convbn", "llama_bf16"]


def load_step(name):
    """The fixture's model (train mode, the archive's weights), its args, loss and targets."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "fixtures"))
    import make_training_fixtures as m
    ep = torch.export.load(os.path.join(ROOT, "fixtures", "training", name + ".pt2"))
    inputs = torch.load(os.path.join(ROOT, "fixtures", "training", name + "_inputs.pt"), weights_only=True)
    model, _, loss_fn, _ = m.cases()[name]()
    model.load_state_dict(ep.state_dict, strict=False)  # the archive also holds non-persistent buffers (rotary's)
    return model.train(), inputs[:1], loss_fn, inputs[1:]


def child(name, mode):
    """In a fresh process: `eager` (median of 5 steps after a warm-up) or `compile` (the first compiled step)."""
    import torch
    model, args, loss_fn, targets = load_step(name)

    def step(m):
        loss_fn(m(*args), *targets).backward()

    if mode == "eager":
        step(model)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            step(model)
            times.append(time.perf_counter() - t0)
        print(json.dumps({"seconds": statistics.median(times)}))
    else:
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        step(compiled)
        print(json.dumps({"seconds": time.perf_counter() - t0}))


def measure(cli, python, name, tmp):
    row = {"step": name}
    for mode in ("eager", "compile"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, f"{name}-{mode}-cache")}
        p = subprocess.run([python, os.path.abspath(__file__), "--child", name, mode], capture_output=True, text=True, env=env)
        line = next((l for l in reversed(p.stdout.splitlines()) if l.startswith("{")), None)
        row[mode + "_s"] = json.loads(line)["seconds"] if line else None
    report = os.path.join(tmp, name + ".json")
    cache = os.path.join(tmp, name + "-pt2diff-cache")
    seed_cache(cache)
    t0 = time.perf_counter()
    p = subprocess.run([cli, os.path.join(ROOT, "fixtures", "training", name + ".pt2"),
                        os.path.join(ROOT, "fixtures", "training", name + "_inputs.pt"), "--json", report,
                        "--inductor-cache", cache, "--worker-python", python], capture_output=True, text=True)
    row["pt2diff_wall_s"] = time.perf_counter() - t0
    r = json.load(open(report)) if os.path.exists(report) else {}
    row.update({"exit": p.returncode, "verdict": r.get("verdict"), "nodes": len(r.get("nodes", [])),
                "gradients": sum(1 for o in r.get("outputs", []) if o["name"].endswith(".grad")),
                "compiles": [{"what": c["what"], "compile_s": c.get("compile_seconds")} for c in r.get("compiles", [])],
                "worker_start_s": next((c.get("worker_start_seconds") for c in r.get("compiles", []) if c.get("worker_start_seconds")), None),
                "cpus": len(os.sched_getaffinity(0))})
    if row["eager_s"] is not None and row["compile_s"] is not None:
        row["ratio"] = row["pt2diff_wall_s"] / (row["eager_s"] + row["compile_s"])
    print(f"  {name}: {row}", file=sys.stderr, flush=True)
    return row


def seed_cache(cache):
    """A fresh Inductor cache for pt2diff with what a process of the user's already has: the precompiled header
    and the vector-ISA probes (built once per machine: the user's process finds them under the temporary
    directory, pt2diff's worker keeps them in its cache). No graph, kernel or FX entry: the step compiles cold."""
    home = os.environ.get("PT2DIFF_HOME") or os.path.expanduser("~/.cache/pt2diff")
    seed = os.path.join(home, "inductor")
    os.makedirs(cache, exist_ok=True)
    if os.path.isdir(os.path.join(seed, "precompiled_headers")):
        shutil.copytree(os.path.join(seed, "precompiled_headers"), os.path.join(cache, "precompiled_headers"))
    if os.path.isfile(os.path.join(seed, "vec_isa_probes.json")):
        shutil.copy(os.path.join(seed, "vec_isa_probes.json"), cache)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt2diff", help="the pt2diff CLI (build/pt2diff)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile, for the caption")
    ap.add_argument("--result", default="training", help="bench/results/RESULT.json, the section of docs/performance.md")
    ap.add_argument("--warm-up", action="store_true", help="one unmeasured step of each side first (machine-wide builds)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="pt2diff-training-bench-")
    if a.warm_up:
        measure(a.pt2diff, a.python, a.steps.split(",")[0], tempfile.mkdtemp(prefix="pt2diff-training-warm-up-"))
    rows = [measure(a.pt2diff, a.python, s, tmp) for s in a.steps.split(",")]
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    torch_version = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    res = {"section": a.result, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
           "commit": rev + ("-dirty" if dirty else ""), "runner": "bench/training_bench.py", "machine": minifier_bench.machine(a.python, "cpu"),
           "torch": torch_version,
           "commands": [{"argv": ["python", "bench/training_bench.py", "build/pt2diff", "--steps", a.steps, "--result", a.result]
                         + (["--warm-up"] if a.warm_up else []), "note": a.note}],
           "data": {"rows": rows}}
    result = os.path.join(ROOT, "bench", "results", a.result + ".json")
    with open(result, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(result)}; render with: python bench/run.py --render-only", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
