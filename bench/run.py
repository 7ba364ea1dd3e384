"""Runs pt2diff's benchmarks and regenerates the tables of docs/performance.md from what they measured.

    bench/run.sh [--sections a,b] [--render-only]     (bench/run.sh builds first, then runs this)
    python bench/run.py --check                       (a test: the doc is what bench/results/ renders)

Every section runs its commands, keeps their raw output in bench/results/SECTION.json (with the
machine, torch version, compiler, date and the exact commands) and renders one table of the doc between
`<!-- bench:SECTION -->` and `<!-- /bench:SECTION -->`, captioned with all of that. No figure in a
table is typed by hand: change a benchmark, run bench/run.sh, commit the doc and the results together.
Sections: loader, dag, interpreter, memory, compile, diff, localize, sweep, build (a cold build of
everything with ccache off: about 15 minutes on 2 cores, so only when asked: --sections build), python
(the Python module: its build and size, a diff from Python against the CLI; asked for: --sections python).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "performance.md")
RESULTS = os.path.join(ROOT, "bench", "results")
DEFAULT_SECTIONS = ["loader", "dag", "interpreter", "memory", "compile", "diff", "localize", "sweep"]
ALL_SECTIONS = DEFAULT_SECTIONS + ["build", "python", "kernel_map", "aoti", "distinct_ops"]


# --- running -------------------------------------------------------------------------------------------
class Runner:
    def __init__(self, build):
        self.build = build
        self.commands = []

    def rel(self, path):
        return os.path.relpath(path, ROOT) if os.path.isabs(path) else path

    def record(self, argv, env=None, note=""):
        """Keeps a command for the caption: its words with paths relative to the clone, env first."""
        words = [f"{k}={self.rel(v)}" for k, v in (env or {}).items()] + [self.rel(a) if a.startswith(ROOT) else a for a in argv]
        self.commands.append({"argv": words, "note": note})
        shown = shlex.join(words)
        print(f"  $ {shown}", file=sys.stderr, flush=True)
        return shown

    def run(self, argv, env=None, timeout=3600):
        """Runs argv (recorded for the caption), returns stdout."""
        shown = self.record(argv, env)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=ROOT)
        if p.returncode != 0:
            sys.exit(f"bench/run.py: {shown} exited {p.returncode}:\n{p.stderr[-3000:]}")
        return p.stdout

    def bench(self, name, *args, env=None):
        out = self.run([os.path.join(self.build, "bench", name), "--benchmark_format=json", *args], env=env)
        return json.loads(out)


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20), "os": platform.platform(terse=True),
            "compiler": cxx[0] if cxx else "unknown"}


def commit():
    """The commit measured, "-dirty" when the tree had uncommitted changes."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return (rev or "unknown") + ("-dirty" if dirty else "")


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()


# --- sections: each returns its data; Runner.commands records how -----------------------------------------
def sec_loader(r, a):
    return {"bench": r.bench("loader_bench", "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true")}


def sec_dag(r, a):
    return {"bench": r.bench("dag_bench", "--benchmark_min_time=0.05")}


def sec_interpreter(r, a):
    graphs = os.path.join(a.build, "bench-graphs")
    fx = json.loads(r.run([a.python, os.path.join(ROOT, "bench", "make_bench_graphs.py"), graphs]).strip().splitlines()[-1])
    b = r.bench("interpreter_bench", "--benchmark_filter=BM_NativeRun|BM_Fp64Run|BM_DiffEager/chain_tiny", "--benchmark_repetitions=3",
                "--benchmark_report_aggregates_only=true", env={"PT2DIFF_BENCH_GRAPHS": graphs})
    return {"fx": fx, "bench": b}


def sec_memory(r, a):
    graphs = os.path.join(a.build, "bench-graphs")
    if not os.path.exists(os.path.join(graphs, "chain_wide.pt2")):
        r.run([a.python, os.path.join(ROOT, "bench", "make_bench_graphs.py"), graphs])
    out = []
    for mode in ("free", "keep"):
        out.append(json.loads(r.run([os.path.join(a.build, "bench", "peak_memory"), mode, os.path.join(graphs, "chain_wide.pt2"),
                                     os.path.join(graphs, "chain_wide_inputs.pt")])))
    return {"runs": out}


def sec_compile(r, a):
    return {"bench": r.bench("compile_bench", "--benchmark_filter=BM_Inductor")}


CLI_CASES = [("mlp", "mlp.pt2", "mlp_inputs.pt"), ("bf16_block", "bf16_block.pt2", "bf16_block_inputs.pt"),
             ("attention_core", "attention_core.pt2", "attention_inputs.pt")]


def cli_wall(r, args, repeats=3):
    """Median wall seconds of `pt2diff ARGS` over `repeats` runs after one untimed run (warm caches)."""
    cli = os.path.join(r.build, "pt2diff")
    shown = r.record([cli, *args], note=f"median of {repeats} after one untimed run")
    walls = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        p = subprocess.run([cli, *args], capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        if p.returncode not in (0, 1):
            sys.exit(f"bench/run.py: {shown} exited {p.returncode}: {p.stderr[-2000:]}")
        if i:
            walls.append(wall)
    return statistics.median(walls)


def sec_diff(r, a):
    fixtures = os.path.join(ROOT, "fixtures")
    cli = {"version": cli_wall(r, ["--version"])}
    for name, graph, inputs in CLI_CASES:
        for compiled in ("eager", "inductor"):
            cli[f"{name}/{compiled}"] = cli_wall(r, [os.path.join(fixtures, graph), os.path.join(fixtures, inputs), "--compiled", compiled])
    eager = r.bench("interpreter_bench", "--benchmark_filter=BM_DiffEager/(mlp|bf16_block|attention_core)", "--benchmark_repetitions=3",
                    "--benchmark_report_aggregates_only=true", env={"PT2DIFF_BENCH_GRAPHS": os.path.join(a.build, "bench-graphs")})
    inductor = r.bench("compile_bench", "--benchmark_filter=BM_DiffInductor")
    return {"cli": cli, "eager": eager, "inductor": inductor}


def sec_localize(r, a):
    return {"bench": r.bench("localize_bench")}


def sec_sweep(r, a):
    return {"bench": r.bench("sweep_bench", "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true")}


def sec_build(r, a):
    """A cold build of everything in a fresh build directory, ccache off, then the heaviest TUs."""
    tmp = tempfile.mkdtemp(prefix="pt2diff-cold-build-")
    try:
        env = {"CCACHE_DISABLE": "1"}
        r.run(["cmake", "-S", ROOT, "-B", tmp, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DPT2DIFF_PYTHON={a.python}"], env=env)
        t0 = time.perf_counter()
        r.run(["cmake", "--build", tmp], env=env, timeout=7200)
        wall = time.perf_counter() - t0
        tus = []
        with open(os.path.join(tmp, ".ninja_log")) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                start, end, _, target, _ = line.rstrip("\n").split("\t")
                if target.endswith(".o"):
                    tus.append((int(end) - int(start), target))
        tus.sort(reverse=True)
        return {"wall_s": wall, "objects": len(tus), "heaviest": [{"target": t, "s": ms / 1000} for ms, t in tus[:8]]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sec_python(r, a):
    """The Python module (docs/python.md): its compile and link with ccache off, its size, and bench/python_bench.py."""
    module_dir = os.path.join(a.build, "python", "pt2diff")
    r.run(["cmake", "--build", a.build, "--target", "pt2diff_python"])  # everything it links is up to date
    for f in os.listdir(module_dir):
        if f.startswith("_pt2diff") and f.endswith(".so"):
            os.remove(os.path.join(module_dir, f))
    obj = os.path.join(a.build, "CMakeFiles", "pt2diff_python.dir", "engine", "python", "module.cpp.o")
    if os.path.exists(obj):
        os.remove(obj)
    t0 = time.perf_counter()
    r.run(["cmake", "--build", a.build, "--target", "pt2diff_python"], env={"CCACHE_DISABLE": "1"})
    wall = time.perf_counter() - t0
    steps = {}
    with open(os.path.join(a.build, ".ninja_log")) as f:
        for line in f:
            if not line.startswith("#"):
                start, end, _, target, _ = line.rstrip("\n").split("\t")
                steps[target] = (int(end) - int(start)) / 1000  # the last build of each target wins
    module = next(os.path.join(module_dir, f) for f in os.listdir(module_dir) if f.startswith("_pt2diff") and f.endswith(".so"))
    stripped = os.path.join(tempfile.mkdtemp(prefix="pt2diff-strip-"), "m.so")
    subprocess.run(["strip", "--strip-debug", "-o", stripped, module], check=True)
    sizes = {"module": os.path.getsize(module), "module_stripped": os.path.getsize(stripped),
             "cli": os.path.getsize(os.path.join(a.build, "pt2diff")), "library": os.path.getsize(os.path.join(a.build, "libpt2diff.a"))}
    shutil.rmtree(os.path.dirname(stripped), ignore_errors=True)
    out = r.run([a.python, os.path.join(ROOT, "bench", "python_bench.py"), os.path.join(a.build, "pt2diff"), os.path.join(ROOT, "fixtures")],
                env={"PYTHONPATH": os.path.join(a.build, "python")})
    return {"build": {"wall_s": wall, "object_s": steps.get("CMakeFiles/pt2diff_python.dir/engine/python/module.cpp.o"),
                      "link_s": steps.get(os.path.relpath(module, a.build))},
            "sizes": sizes, "bench": json.loads(out)}


KERNEL_MAP_CASES = ["mlp", "attention_core", "conv_bn_relu_core", "bf16_block_core"]


def sec_kernel_map(r, a):
    """The kernel map's cost (docs/kernel-map.md): the whole-graph compile and its run with and without it,
    Inductor's caches off, exploded compile and localization off; each the median of 3 runs."""
    fixtures, rows = os.path.join(ROOT, "fixtures"), {}
    for label, extra in (("off", ["--no-kernel-map"]), ("on", [])):  # the caption: one command per mode
        r.commands.append({"argv": ["TORCHINDUCTOR_FORCE_DISABLE_CACHES=1", "build/pt2diff", "fixtures/NAME.pt2", "fixtures/NAME_inputs.pt",
                                    "--no-exploded", "--no-localize", "--json", "OUT.json", *extra],
                           "note": f"3 times per fixture: the map {label}" + (" (the default)" if label == "on" else "")})
    for name in KERNEL_MAP_CASES:
        base = name[:-5] if name.endswith("_core") else name
        for label, extra in (("off", ["--no-kernel-map"]), ("on", [])):
            samples = []
            for _ in range(3):
                out = os.path.join(tempfile.mkdtemp(prefix="pt2diff-km-"), "r.json")
                argv = [os.path.join(a.build, "pt2diff"), os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, base + "_inputs.pt"),
                        "--no-exploded", "--no-localize", "--json", out, *extra]
                p = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
                if p.returncode != 0:
                    sys.exit(f"bench/run.py: {shlex.join(argv)} exited {p.returncode}:\n{p.stderr[-3000:]}")
                rep = json.load(open(out))
                shutil.rmtree(os.path.dirname(out), ignore_errors=True)
                graph = next(c for c in rep["compiles"] if c["what"] == "graph")
                k = rep["kernels"]
                samples.append({"compile_s": graph["compile_seconds"], "run_s": graph["run_seconds"], "wall_s": rep["seconds"],
                                "calls": len(k["kernels"]), "observed": k["observed"], "judged": k["judged"], "bytes": k["observed_bytes"]})
            med = lambda key: statistics.median(x[key] for x in samples)
            rows[f"{name}/{label}"] = {**samples[-1], "compile_s": med("compile_s"), "run_s": med("run_s"), "wall_s": med("wall_s")}
    return {"cases": rows}


AOTI_CASES = ["mlp", "attention_core", "bf16_block_core"]


def sec_aoti(r, a):
    """AOTInductor against the JIT path (docs/usage.md, "AOTInductor"): the default job (kernel map and
    exploded compile on, localization off) with `--compiled inductor` and `--compiled aoti`, Inductor's caches
    off; the graph compile, the exploded compile and the whole diff, each the median of 3 runs."""
    fixtures, rows = os.path.join(ROOT, "fixtures"), {}
    for c in ("inductor", "aoti"):
        r.commands.append({"argv": ["TORCHINDUCTOR_FORCE_DISABLE_CACHES=1", "build/pt2diff", "fixtures/NAME.pt2", "fixtures/NAME_inputs.pt",
                                    "--compiled", c, "--no-localize", "--json", "OUT.json"], "note": "3 times per fixture"})
    for name in AOTI_CASES:
        base = name[:-5] if name.endswith("_core") else name
        for c in ("inductor", "aoti"):
            samples = []
            for _ in range(3):
                out = os.path.join(tempfile.mkdtemp(prefix="pt2diff-aoti-"), "r.json")
                argv = [os.path.join(a.build, "pt2diff"), os.path.join(fixtures, name + ".pt2"), os.path.join(fixtures, base + "_inputs.pt"),
                        "--compiled", c, "--no-localize", "--json", out]
                p = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
                if p.returncode != 0:
                    sys.exit(f"bench/run.py: {shlex.join(argv)} exited {p.returncode}:\n{p.stderr[-3000:]}")
                rep = json.load(open(out))
                shutil.rmtree(os.path.dirname(out), ignore_errors=True)
                by = {x["what"]: x for x in rep["compiles"]}
                samples.append({"graph_s": by["graph"]["compile_seconds"], "exploded_s": by["exploded"]["compile_seconds"],
                                "wall_s": rep["seconds"], "calls": len(rep["kernels"].get("kernels", []))})
            med = lambda key: statistics.median(x[key] for x in samples)
            rows[f"{name}/{c}"] = {**samples[-1], "graph_s": med("graph_s"), "exploded_s": med("exploded_s"), "wall_s": med("wall_s")}
    return {"cases": rows}


DISTINCT_OPS_LAYERS = [2, 8]


def sec_distinct_ops(r, a):
    """The exploded compile with each distinct op compiled once against the whole exploded graph (docs/worker-protocol.md):
    the worker's compile and run of every op of a bf16 Llama-style decoder (d=256, 64 tokens), caches off, each
    mode in a fresh process, the median of 3."""
    script = os.path.join(ROOT, "tests", "device", "test_distinct_ops_cuda.py")
    for mode in ("distinct", "whole"):
        r.commands.append({"argv": ["python", "tests/device/test_distinct_ops_cuda.py", "cpu", "--layers", "N", "--only", mode,
                                    "--json", "OUT.json"], "note": f"3 times per size ({', '.join(map(str, DISTINCT_OPS_LAYERS))} layers)"})
    rows = {}
    for layers in DISTINCT_OPS_LAYERS:
        for mode in ("distinct", "whole"):
            samples = []
            for _ in range(3):
                out = os.path.join(tempfile.mkdtemp(prefix="pt2diff-distinct-"), "r.json")
                argv = [a.python, script, "cpu", "--layers", str(layers), "--only", mode, "--json", out]
                p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
                if p.returncode != 0:
                    sys.exit(f"bench/run.py: {shlex.join(argv)} exited {p.returncode}:\n{p.stderr[-3000:]}")
                samples.append(json.load(open(out)))
                shutil.rmtree(os.path.dirname(out), ignore_errors=True)
            med = lambda key: statistics.median(x[key] for x in samples)
            rows[f"{layers}/{mode}"] = {**samples[-1], "compile_s": med("compile_s"), "run_s": med("run_s")}
    return {"cases": rows}


SECTION_FUNCS = {n: globals()["sec_" + n] for n in ALL_SECTIONS}


# --- rendering -----------------------------------------------------------------------------------------
def fmt_time(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def runs(bench, aggregate="median"):
    """name → benchmark entry: the given aggregate where there are repetitions, else the single run. Names
    lose Google Benchmark's suffixes (/real_time, /manual_time, /iterations:N)."""
    out = {}
    for b in bench["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != aggregate:
            continue
        key = re.sub(r"/(real_time|manual_time|iterations:\d+)", "", b.get("run_name", b["name"]))
        if b.get("run_type") == "aggregate" or key not in out:
            out[key] = b
    return out


def wall(b):
    return b["real_time"] * UNIT[b["time_unit"]]


def cpu(b):
    return b["cpu_time"] * UNIT[b["time_unit"]]


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def ren_loader(d):
    b = runs(d["bench"])
    rows = [[n, fmt_time(wall(e)), fmt_time(cpu(e))] for n, e in b.items()]
    return table(["benchmark (median of 3)", "wall", "CPU"], rows)


def ren_dag(d):
    b = runs(d["bench"])
    kinds = ["BM_BuildDag", "BM_AncestorConeOfMiddle", "BM_FrontierOfHalfPrefix", "BM_LastUses", "BM_TopologicalSort"]
    sizes = sorted({int(n.split("/")[1]) for n in b if "/" in n and n.split("/")[1].isdigit()})
    rows = [[f"{n:,}"] + [fmt_time(wall(b[f"{k}/{n}"])) if f"{k}/{n}" in b else "" for k in kinds] for n in sizes]
    big_o = {e["run_name"]: e for e in d["bench"]["benchmarks"] if e.get("aggregate_name") == "BigO"}
    fits = [f"{k[3:]} {big_o[k]['cpu_coefficient']:.3g}·{big_o[k]['big_o']} {big_o[k]['time_unit']}" for k in kinds if k in big_o]
    return table(["nodes", "build Dag", "ancestor cone of the middle", "frontier of the first half", "last uses", "topological sort"], rows) + \
        "\n\nGoogle Benchmark's complexity fit (CPU time): " + "; ".join(fits) + "."


def ren_interpreter(d):
    b, fx = runs(d["bench"]), d["fx"]
    native = b["BM_NativeRun/chain_tiny"]
    rows = []
    for name, what in [("BM_NativeRun/chain_tiny", "native run, 1000 tiny elementwise ops on float32[8] (`chain_tiny`)"),
                       ("BM_Fp64Run/chain_tiny", "fp64 run of the same graph")]:
        e = b[name]
        rows.append([what, fmt_time(wall(e)), fmt_time(cpu(e)), f"{us_per_node(e):.2f} µs"])
    rows.append(["`torch.fx.Interpreter` on the same graph, same venv (best of 20)", "", "", f"{fx['fx_interpreter_us_per_node']:.2f} µs"])
    rows.append(["the exported `GraphModule` called directly (generated Python, best of 20)", "", "",
                 f"{fx['graph_module_us_per_node']:.2f} µs"])
    ratio_fx = fx["fx_interpreter_us_per_node"] / us_per_node(native)
    ratio_gm = fx["graph_module_us_per_node"] / us_per_node(native)
    rows.append(["pt2diff's native run against `torch.fx.Interpreter` / the `GraphModule`", "", "",
                 f"{ratio_fx:.1f}x / {ratio_gm:.1f}x faster"])
    e = b["BM_DiffEager/chain_tiny"]
    rows.append(["whole `diff()` with the compiled side `eager` (native, fp64 and local runs, exploded run, metrics of every value)",
                 fmt_time(wall(e)), fmt_time(cpu(e)), f"{us_per_node(e):.2f} µs"])
    return table(["what (median of 3)", "wall", "CPU", "per node"], rows)


def us_per_node(e):
    # Google Benchmark writes an inverted rate counter in seconds per node.
    return e["us_per_node"] * 1e6


def ren_memory(d):
    rows = [[{"free": "freed after their last use (default)", "keep": "kept to the end"}[x["values"]], f"{x['peak_rss_mib']} MiB",
             f"{x['above_loaded_mib']} MiB"] for x in d["runs"]]
    return table(["values", "peak RSS", "above the loaded program"], rows)


def ren_compile(d):
    b = runs(d["bench"])
    rows = []
    s = b.get("BM_InductorWorkerStartup")
    if s:
        rows.append(["worker start-up (Python, `import torch`, archive load)", fmt_time(s["startup_s"])])
    for n in (5, 10, 25, 50):
        e = b.get(f"BM_InductorCompilePrefix/{n}")
        if e:
            rows.append([f"cold compile of the first {n} nodes (fused); its compiled run", f"{fmt_time(wall(e))}; {e['run_ms']:.2f} ms"])
    e = b.get("BM_InductorExplodedVsPerOp")
    if e:
        rows.append([f"exploded compile of all {int(e['nodes'])} nodes (one compile)", fmt_time(e["exploded_s"])])
        rows.append([f"one compile per node, summed ({int(e['nodes'])} compiles)", fmt_time(e["per_op_sum_s"])])
        rows.append(["exploded against per-node compiles", f"{e['per_op_sum_s'] / e['exploded_s']:.1f}x less"])
    return table(["what (attention_core, cold Inductor cache, backend `inductor`)", "time"], rows)


def ren_diff(d):
    eager, ind, cli = runs(d["eager"]), runs(d["inductor"]), d["cli"]
    rows = []
    for name, _, _ in CLI_CASES:
        e = eager.get(f"BM_DiffEager/{name}")
        cold, warm = ind[f"BM_DiffInductor/{name}_cold"], ind[f"BM_DiffInductor/{name}_warm"]
        rows.append([name, int(e["nodes"]) if e else "",
                     fmt_time(wall(e)) if e else "", fmt_time(cli[f"{name}/eager"]),
                     fmt_time(wall(warm)), fmt_time(cli[f"{name}/inductor"]),
                     f"{fmt_time(warm['startup_s'])} / {fmt_time(warm['compile_s'])} / {fmt_time(warm['rest_s'])}",
                     int(warm["compiles"]), fmt_time(wall(cold)), f"{fmt_time(cold['startup_s'])} / {fmt_time(cold['compile_s'])}"])
    return table(["fixture", "nodes", "`diff()` eager", "CLI `--compiled eager`", "`diff()` inductor, warm", "CLI `--compiled inductor`, warm",
                  "warm: start-up / compiles / rest", "compiles", "`diff()` inductor, cold", "cold: start-up / compiles"], rows) + \
        f"\n\nThe CLI adds its own start-up to `diff()`: `pt2diff --version` takes {fmt_time(cli['version'])} (loading libtorch)."


def ren_localize(d):
    b = runs(d["bench"])
    rows = []
    for m in (100, 1000, 10000, 100000):
        no = b.get(f"BM_LocalizeChainFault/nodes:{m}/exploded:0")
        ex = b.get(f"BM_LocalizeChainFault/nodes:{m}/exploded:1")
        if not no or not ex:
            continue
        rows.append([f"{m:,}", int(no["budget"]), int(no["compiles"]), int(ex["compiles"]), f"{no['engine_ms_per_probe']:.2f} ms",
                     f"{fmt_time(wall(no))} / {fmt_time(wall(ex))}", "yes" if no["found"] and ex["found"] else "NO"])
    return table(["nodes m", "budget 2⌈log2 m⌉+4", "compiles (no exploded)", "compiles (exploded first)", "engine time per probe",
                  "whole run (no exploded / exploded)", "culprit found"], rows)


def ren_sweep(d):
    b = runs(d["bench"])
    rows = []
    for i in range(3):
        plain, sweep = b.get(f"BM_PlainRunFault/{i}"), b.get(f"BM_Sweep13Fault/{i}")
        if plain and sweep:
            rows.append([plain.get("label", str(i)), fmt_time(wall(plain)), fmt_time(wall(sweep)), f"{wall(sweep) / wall(plain):.1f}x"])
    return table(["graph (backend `fault`, median of 3)", "one plain run", "13-point sweep", "ratio"], rows)


def ren_build(d):
    rows = [["cold build of everything (library, CLI, tests, benchmarks), ccache off", fmt_time(d["wall_s"]), f"{d['objects']} objects"]]
    rows += [[f"`{t['target']}`", fmt_time(t["s"]), "heaviest objects (ninja's log; the other core busy)"] for t in d["heaviest"]]
    return table(["what", "time", "note"], rows)


def ren_gpu(d):
    """bench/gpu_bench.py's rows (run by hand on a CUDA machine: bench/results/gpu.json)."""
    def wall(row, key):
        v = row.get(key)
        if v is None:
            return "not measured"
        return f"{v['wall']:.1f} s" if "error" not in v else f"exit {v['exit']} ({v['error'].split(': ')[1] if ': ' in v['error'] else ''})"

    def culprit(row, key):
        v = row.get(key)
        if v is None or "error" in v:
            return wall(row, key)
        return f"{v['wall']:.1f} s ({', '.join(v.get('culprit') or ['-'])}; {v.get('localize_compiles')} localization compiles)"

    def peak(row, key):
        v = row.get(key) or {}
        b = (v.get("devices") or {}).get("peak_gpu_bytes", -1)
        return f"{b / 2**20:.0f} MiB" if b and b > 0 else "-"

    rows = [[f"{r['model']} {r['dtype']}", str(r["nodes"]), wall(r, "e2e_cuda"), wall(r, "e2e_cpu"), culprit(r, "culprit_cuda"),
             culprit(r, "culprit_cpu"),
             wall(r, "fp64_pass_gpu"), wall(r, "fp64_pass_cpu_reference"), wall(r, "fp64_pass_all_cpu"),
             f"{peak(r, 'e2e_cuda')} / {peak(r, 'fp64_pass_gpu')} / {r['pytorch_eager_peak_bytes'] / 2**20:.0f} MiB"] for r in d]
    return table(["graph", "nodes", "end to end, CUDA", "end to end, CPU", "time to culprit, CUDA",
                  "time to culprit, CPU", "fp64 pass: all on GPU",
                  "eager GPU, fp64 CPU", "all on CPU", "peak GPU: pt2diff end to end / fp64 pass / PyTorch eager"], rows)


def ren_python(d):
    b, sz, bench = d["build"], d["sizes"], d["bench"]
    mib = lambda n: f"{n / 2**20:.1f} MiB"
    rows = [["build: `engine/python/module.cpp` compiled, ccache off", fmt_time(b["object_s"]), "the one TU with pybind11 and torch/csrc headers"],
            ["build: the module linked (`libpt2diff.a`, libtorch, libtorch_python)", fmt_time(b["link_s"]), ""],
            ["build: `cmake --build --target pt2diff_python`, the library up to date", fmt_time(b["wall_s"]), "what the module adds to a build"],
            ["size: `_pt2diff*.so` (line tables, `-g1`)", mib(sz["module"]),
             f"{mib(sz['module_stripped'])} with debug info stripped; the CLI is {mib(sz['cli'])}"],
            ["`import pt2diff` in a fresh interpreter", fmt_time(bench["import_s"]), f"`import torch` alone: {fmt_time(bench['import_torch_s'])}"]]
    for name, c in bench["cases"].items():
        for side in ("eager", "inductor"):
            if side not in c:
                continue
            e = c[side]
            warm = ", warm cache" if side == "inductor" else ""
            rows.append([f"{name}, `--compiled {side}`{warm}: CLI / `diff(path, tensors)` / `diff(ExportedProgram, tensors)`",
                         f"{fmt_time(e['cli_s'])} / {fmt_time(e['python_files_s'])} / {fmt_time(e['python_memory_s'])}",
                         "the CLI is a fresh process (libtorch's start-up); Python loads the program on every call"])
        rows.append([f"{name}: `torch.export.save` to memory / `load(bytes)` / `load(path)` / `torch.load` of the inputs file",
                     f"{fmt_time(c['save_s'])} / {fmt_time(c['load_bytes_s'])} / {fmt_time(c['load_path_s'])} / {fmt_time(c['inputs_file_s'])}",
                     f"archive {c['archive_bytes'] / 1024:.0f} KiB"])
    return table(["what (median of 5 after one untimed run)", "time / size", "note"], rows)


def ren_kernel_map(d):
    rows = []
    for name in KERNEL_MAP_CASES:
        off, on = d["cases"][f"{name}/off"], d["cases"][f"{name}/on"]
        rows.append([name, str(on["calls"]), f"{on['observed']} / {on['judged']}", f"{on['bytes'] / 1024:.1f} KiB",
                     f"{fmt_time(off['compile_s'])} / {fmt_time(on['compile_s'])}", f"{fmt_time(off['run_s'])} / {fmt_time(on['run_s'])}",
                     f"{fmt_time(off['wall_s'])} / {fmt_time(on['wall_s'])}"])
    return table(["fixture", "kernel calls", "buffers observed / judged", "copied", "graph compile: off / on", "compiled run: off / on",
                  "whole diff: off / on"], rows)


def ren_aoti(d):
    rows = []
    for name in AOTI_CASES:
        jit, aoti = d["cases"][f"{name}/inductor"], d["cases"][f"{name}/aoti"]
        rows.append([name, f"{jit['calls']} / {aoti['calls']}", f"{fmt_time(jit['graph_s'])} / {fmt_time(aoti['graph_s'])}",
                     f"{fmt_time(jit['exploded_s'])} / {fmt_time(aoti['exploded_s'])}", f"{fmt_time(jit['wall_s'])} / {fmt_time(aoti['wall_s'])}"])
    return table(["fixture", "kernel calls: JIT / AOTI", "graph compile (instrumented): JIT / AOTI", "exploded compile: JIT / AOTI",
                  "whole diff: JIT / AOTI"], rows)


def ren_distinct_ops(d):
    rows = []
    for layers in DISTINCT_OPS_LAYERS:
        one, whole = d["cases"][f"{layers}/distinct"], d["cases"][f"{layers}/whole"]
        rows.append([f"{layers} layers", f"{whole['ops']} / {one['distinct']}", f"{fmt_time(whole['compile_s'])} / {fmt_time(one['compile_s'])}",
                     f"{fmt_time(whole['run_s'])} / {fmt_time(one['run_s'])}", f"{whole['compile_s'] / one['compile_s']:.1f}x"])
    return table(["bf16 decoder (d=256, 64 tokens)", "ops / distinct", "exploded compile: whole / distinct", "run: whole / distinct",
                  "compile speed-up"], rows)


def ren_minifier(d):
    """bench/minifier_bench.py's rows (run by hand: bench/results/minifier.json): each planted case, pt2diff
    then the accuracy minifier, and whether the minifier's check fires with Inductor's caches on."""
    def ops(names):
        return ", ".join(f"`{n}`" for n in names or []) or "-"

    rows = []
    for c in d["cases"]:
        case = f"{c['graph']}: `{c['op']}` " + (f"at [{c['shape'].replace(',', ', ')}]" if c["shape"] else "at every shape") + (
            f", scaled by 1 + {c['error']:g}" if c.get("error", 1e-2) != 1e-2 else "")
        p = c["pt2diff"]
        if "culprit_nodes" in p:
            names = f"culprit node {ops(p['culprit_nodes'])} ({ops(p['culprit_ops'])})"
            k = p.get("first_failing_kernel")
            if k:
                names += f"; kernel table: first failing `{k['name']}` (nodes {ops(k['nodes'])}), no extra compile"
            split = [x["what"] for x in p["compiles"]] + [f"{p['localization_compiles'] or 0} localization"]
            rest = p["inductor_compiles"] - len(p["compiles"]) - (p["localization_compiles"] or 0)
            if rest:
                split.append(f"{rest} for the hints")
            rows.append([case, "pt2diff", fmt_time(p["wall_s"]), f"{p['inductor_compiles']} ({' + '.join(split)})", names])
        else:
            rows.append([case, "pt2diff", f"exit {p['exit']}", "-", "no report"])
        m = c["minifier"]
        det, mini = m["detect"], m.get("minify")
        if mini is None:
            why = "" if det["accuracy_failed"] else ": the accuracy check passed" + (
                " (dynamo warned \"Found nan in reference\": its RMSE against its own float64 run was NaN, and same() with"
                " equal_nan counts NaN against NaN as a pass)"
                if det.get("nan_in_reference") else "")
            rows.append([case, "minifier", fmt_time(det["wall_s"]), str(det["compiles"]), "no minifier_launcher.py written" + why])
            continue
        total = det["wall_s"] + mini["wall_s"]
        wall_cell = f"{fmt_time(total)} ({fmt_time(det['wall_s'])} + {fmt_time(mini['wall_s'])})"
        compiles = f"{det['compiles'] + mini['compiles']} ({det['compiles']} + {mini['compiles']}" + (
            f"; {mini['queries']} queries)" if mini["queries"] is not None else ")")
        left = ", ".join(f"`{n}`" + (f" ×{k}" if k > 1 else "") for n, k in (mini.get("ops") or {}).items()) or "no ATen op"
        if mini["timed_out"]:
            # the minifier's own progress lines ("Went from 34 to 33 nodes"): all of them, or those in the kept stderr tail
            went = mini.get("progress") or re.findall(r"Went from (\d+) to (\d+) nodes", mini.get("stderr_tail", ""))
            reached = "no culprit: cut by the time limit" + (
                f"; its smallest failing graph by then: {sum(mini['ops'].values())} ATen calls, ops {left}" if "ops" in mini else "") + (
                f" (its last step printed: from {went[-1][0]} to {went[-1][1]} FX nodes)" if went else "")
            rows.append([case, "minifier", f"over {fmt_time(mini['timeout_s'])} (the limit)", compiles, reached])
        elif "ops" in mini:
            rows.append([case, "minifier", wall_cell, compiles, f"minified repro: {sum(mini['ops'].values())} ATen call(s): {left}"])
        else:
            rows.append([case, "minifier", wall_cell, compiles, f"minify exited {mini['exit']}, no repro.py"])
    out = table(["case (fixture: planted op at shape)", "tool", "wall time to culprit", "Inductor compiles", "what it names"], rows)
    cc = d.get("cache_check")
    if cc:
        def fired(r):
            return "failed, minifier_launcher.py written" if r["accuracy_failed"] else "did not fail, nothing written"
        runs_ = "; ".join(f"{r['cache']} cache: {r['compiles']} Inductor compiles, the accuracy check {fired(r)} ({fmt_time(r['wall_s'])})"
                          for r in cc["runs"])
        out += (f"\n\nWith Inductor's caches on ({cc['case']}: a fresh cache directory, the model compiled twice under the minifier's"
                f" settings): {runs_}.")
    return out


def ren_kernel_search(d):
    """bench/kernel_search.py's rows (run by hand: bench/results/kernel_search.json): per planted lowering bug,
    bisection against the kernel table and the search inside its first failing kernel, then median and worst."""
    rows, done = [], []
    for r in d["rows"]:
        case = [f"`{r['planted']}`", r["fixture"]]
        if "error" in r or r.get("verdict") != "diverged":
            rows.append(case + [f"exit {r['exit']}: {r.get('verdict') or r.get('error', '')[:80]} (nothing to localize)" if r.get("verdict") == "agree"
                                else f"exit {r['exit']}", "", ""])
            continue
        b, t, i = r["before"], r["table"], r["inside"]
        done.append(r)
        rows.append(case + [f"{b['compiles']}, {fmt_time(b['seconds'])}, {b['kind']} {', '.join(b['culprit'] or [])}",
                            f"`{t['kernel']}` ({', '.join(t['nodes'] or [])})",
                            f"{i['compiles']} ({i['bound']}), {fmt_time(i['seconds'] or 0)}, {i['kind']} {i['op']}"])
    out = table(["planted bug", "fixture", "bisection: compiles, s, culprit", "kernel table (0 compiles): first failing kernel",
                 "inside it: compiles (bound), s, op"], rows)
    if done:
        def count(v):
            return f"{v:g}"

        def stat(key, part, f):
            vals = [r[key][part] for r in done]
            return f"{f(statistics.median(vals))} and {f(max(vals))}"
        out += (f"\n\nMedian and worst over the {len(done)} cases that diverge: bisection {stat('before', 'compiles', count)} compiles, "
                f"{stat('before', 'seconds', fmt_time)}; the search inside the kernel {stat('inside', 'compiles', count)} compiles, "
                f"{stat('inside', 'seconds', fmt_time)}; the whole default job {fmt_time(min(r['wall'] for r in done))} to "
                f"{fmt_time(max(r['wall'] for r in done))} per case.")
    return out


RENDERERS = {n: globals()["ren_" + n] for n in ALL_SECTIONS}
RENDERERS["kernel_search"] = ren_kernel_search  # rendered from results only: bench/kernel_search.py, run by hand
RENDERERS["gpu"] = ren_gpu  # rendered from results only: bench/gpu_bench.py measures it on a GPU machine
RENDERERS["minifier"] = ren_minifier  # rendered from results only: bench/minifier_bench.py, run by hand
RENDERERS["minifier_gpu"] = ren_minifier  # bench/minifier_bench.py --device cuda, run by hand on a GPU


def ren_training(d):
    """bench/training_bench.py's rows (run by hand: bench/results/training.json): a training-step diff against one
    eager step plus one cold compile of forward and backward."""
    rows = []
    for r in d["rows"]:
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else "-"
        compiles = ", ".join(f"{c['what']} {c['compile_s']:.1f} s" for c in r["compiles"] if c.get("compile_s") is not None)
        rows.append([f"`{r['step']}` ({r['nodes']} nodes, {r['gradients']} gradients)", fmt_time(r["eager_s"]),
                     fmt_time(r["compile_s"]), f"{fmt_time(r['pt2diff_wall_s'])} ({r['verdict']}; {compiles})", ratio])
    return table(["step", "eager step", "cold torch.compile step (forward + backward)", "pt2diff (its compiles)",
                  "pt2diff / (eager + cold compile)"], rows)


def ren_dist(d):
    """bench/dist_bench.py's rows (run by hand: bench/results/dist.json): `pt2diff dist` on the tensor-parallel step
    against the user's own compiled step on the same ranks."""
    def gib(b):
        return f"{b / 2**30:.2f} GiB"
    rows = []
    for r in d["rows"]:
        full, outs = r["dist"], r["dist_outputs_only"]
        base = r["user_s"]
        rows.append([str(r["ranks"]), f"{fmt_time(r['user_s'])}, {gib(r['user_peak'])}", f"{fmt_time(r['capture_s'])}, {gib(r['capture_peak'])}",
                     f"{fmt_time(full['wall_s'])}, {gib(full['peak'])} ({full['verdict']}, {full['graphs']} graphs)",
                     f"{fmt_time(outs['wall_s'])}, {gib(outs['peak'])}",
                     f"{full['wall_s'] / base:.2f}x / {outs['wall_s'] / base:.2f}x",
                     f"{full['peak'] / r['user_peak']:.2f}x / {outs['peak'] / r['user_peak']:.2f}x"])
    return table(["ranks", "the user's compiled step (time, memory)", "capture", "pt2diff dist", "pt2diff dist --no-rank-local",
                  "time / the user's step", "memory / the user's step"], rows)


RENDERERS["dist"] = ren_dist  # rendered from results only: bench/dist_bench.py, run by hand
RENDERERS["training"] = ren_training  # rendered from results only: bench/training_bench.py, run by hand
RENDERERS["training_many_cpus"] = ren_training  # bench/training_bench.py --result training_many_cpus (4+ CPUs: overlap)


def ren_sizes(d):
    """bench/sizes_bench.py's rows (run by hand: bench/results/sizes.json, sizes_gpu.json): a size sweep compiled
    dynamic (one compile for every size) against the same sweep with --static (a compile per size)."""
    rows = []
    for r in d["rows"]:
        dyn, st = r["dynamic"], r["static"]
        rows.append([f"`{r['graph']}` ({dyn['sizes']} sizes)",
                     f"{fmt_time(dyn['wall_s'])}: {dyn['compiles']} compiles, {dyn['recompiles']} recompiles, {dyn['agree']} agree",
                     f"{fmt_time(st['wall_s'])}: {st['compiles']} compiles, {st['recompiles']} recompiles, {st['agree']} agree",
                     f"{st['wall_s'] / dyn['wall_s']:.1f}x"])
    return table(["graph (default sizes)", "`pt2diff sizes` (dynamic: one compile)", "`pt2diff sizes --static` (a compile per size)",
                  "static / dynamic"], rows)


RENDERERS["sizes"] = ren_sizes  # rendered from results only: bench/sizes_bench.py, run by hand
RENDERERS["sizes_gpu"] = ren_sizes  # bench/sizes_bench.py --device cuda, run by hand on a GPU


def ren_decoder_memory(rows):
    """bench/memory_bench.py's rows (run by hand, on the CPU here and on a GPU machine: bench/results/decoder_memory.json)."""
    def mib(b):
        return f"{b / 2**20:.0f} MiB" if isinstance(b, (int, float)) and b >= 0 else "-"

    out = ["| decoder | device | host: PyTorch eager | host: pt2diff fp64 pass (at its start) | host: pt2diff end to end (at its start) | "
           "peak GPU: eager / fp64 pass / end to end | wall: fp64 pass / end to end |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        c, m, e = r["config"], r["model"], r["eager"]

        def host(name):  # the engine's peak and its memory when the diff started, less its own baseline
            d = (r["runs"].get(name) or {}).get("devices") or {}
            base = r["engine_base_host_bytes"]
            return f"{mib(d['peak_host_bytes'] - base)} ({mib(d['start_host_bytes'] - base)})" if d.get("peak_host_bytes", -1) >= 0 else "-"

        def gpu(name):
            return mib(((r["runs"].get(name) or {}).get("devices") or {}).get("peak_gpu_bytes", -1))

        def wall(name):
            run = r["runs"].get(name) or {}
            return f"{run['wall']:.1f} s ({run.get('verdict', 'exit ' + str(run.get('exit')))})" if run else "-"
        out.append(f"| {c['layers']} layers, d={c['dim']}, {m['parameters'] / 1e9:.2f} B parameters, {m['nodes']} nodes, {c['dtype']} "
                   f"({mib(m['weight_bytes'])} of weights), {c['seq']} tokens | {r['device']} | {mib(e['host_peak_bytes'] - e['host_base_bytes'])} | "
                   f"{host('fp64')} | {host('e2e')} | {mib(e.get('gpu_peak_bytes', -1))} / {gpu('fp64')} / {gpu('e2e')} | "
                   f"{wall('fp64')} / {wall('e2e')} |")
    return "\n".join(out)


RENDERERS["decoder_memory"] = ren_decoder_memory  # rendered from results only: bench/memory_bench.py, run by hand


def ren_gpu_limit(rows):
    """bench/gpu_bench.py --limit's rows (run by hand on a CUDA machine: bench/results/gpu_limit.json): pt2diff end to
    end, compiles one after the other and overlapped, beside the limit (load + eager + one cold compile and run); then
    memory, pt2diff's beside PyTorch eager's, and the stage where pt2diff's GPU peak falls."""
    def walls(ms):
        if not ms:
            return "not measured"
        return ", ".join(f"{m['wall']:.1f}" if "error" not in m else f"exit {m['exit']}" for m in ms) + " s"

    def mean(ms):
        ok = [m["wall"] for m in ms or [] if "error" not in m]
        return sum(ok) / len(ok) if ok else float("nan")

    def to_result(m):  # the limit: spawn to the compiled call's end, the process's exit left out
        return sum(m["parts"].values()) if "parts" in m else float("nan")

    def ratio(x):
        return "-" if x != x else f"{x:.2f}x"

    def name_of(r):
        c = r["config"]
        return (f"decoder {c['layers']} layers, d={c['dim']}, {c['dtype']}, {c['seq']} tokens" if c else
                "nn.TransformerEncoder bfloat16 (4 layers, d=256, 8 x 128)") + (f"; {r['note']}" if r.get("note") else "")

    out = ["| graph | nodes | limit (import / load / eager / compile and run) | pt2diff, compiles in series | "
           "pt2diff, overlapped | e2e / limit: series -> overlapped | reports | time to culprit, overlapped | "
           "peak GPU: pt2diff / eager |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lim = r.get("limit", [])
        parts = " / ".join(" or ".join(f"{m['parts'][k]:.1f}" for m in lim if "parts" in m)
                           for k in ("import", "load", "eager", "compile_and_run"))
        cul = r.get("culprit_overlap") or {}
        culprit = (f"{cul['wall']:.1f} s ({', '.join(cul.get('culprit') or ['no culprit'])}; {cul.get('localize_compiles')} "
                   f"localization compiles)" if cul and "error" not in cul else "not measured")
        peak = ((r["e2e_overlap"][0].get("devices") or {}).get("peak_gpu_bytes", -1))
        limit_s = [to_result(m) for m in lim if "parts" in m]
        limit_mean = sum(limit_s) / len(limit_s) if limit_s else float("nan")
        same = ("identical but for timings" if r.get("reports_identical") else "DIFFERENT") if "reports_identical" in r else "one run"
        limit_cell = f"{', '.join(f'{x:.1f}' for x in limit_s)} s ({parts} s)" if limit_s else "not measured"
        out.append(f"| {name_of(r)} | {r['nodes']} | {limit_cell} | {walls(r.get('e2e_serial'))} | "
                   f"{walls(r['e2e_overlap'])} | {ratio(mean(r.get('e2e_serial')) / limit_mean)} -> {ratio(mean(r['e2e_overlap']) / limit_mean)} | "
                   f"{same} | {culprit} | {peak / 2**20:.0f} / {r['pytorch_eager_peak_bytes'] / 2**20:.0f} MiB |")
    measured = [r for r in rows if any("stages" in m for m in r["e2e_overlap"])]
    if measured:
        out += ["", "Memory, pt2diff overlapped against PyTorch eager (the limit's process after its eager run: archive loaded, "
                "module run once), and where pt2diff's time went (the report's `stages`, seconds and each stage's GPU peak):", "",
                "| graph | peak GPU: pt2diff / eager | peak host: pt2diff / eager | stages: seconds (GPU peak MiB) |", "|---|---|---|---|"]
        for r in measured:
            m = next(m for m in r["e2e_overlap"] if "stages" in m)
            d = m["devices"]
            eager_host = [x["eager_host_peak_bytes"] for x in r.get("limit", []) if "eager_host_peak_bytes" in x]
            host = f"{d['peak_host_bytes'] / 2**30:.1f} / " + (f"{eager_host[0] / 2**30:.1f} GiB" if eager_host else "- GiB")
            stages = ", ".join(f"{k} {v[0]:.1f} s ({v[1]})" for k, v in m["stages"].items() if v[0] >= 0.5 or k == max(
                m["stages"], key=lambda s: m["stages"][s][1] or 0))
            out.append(f"| {name_of(r)} | {d['peak_gpu_bytes'] / 2**20:.0f} / {r['pytorch_eager_peak_bytes'] / 2**20:.0f} MiB | {host} | {stages} |")
    return "\n".join(out)


RENDERERS["gpu_limit"] = ren_gpu_limit  # rendered from results only: bench/gpu_bench.py --limit, run by hand on a GPU


def caption(res):
    m = res["machine"]
    cmds = "; ".join(f"`{shlex.join(c['argv'])}`" + (f" ({c['note']})" if c["note"] else "") for c in res["commands"])
    build_type = ""
    if res.get("benchmark_library_build_type") == "debug":
        build_type = (" Google Benchmark is Debian's package, whose library reports a debug build: that is the harness, not"
                      " pt2diff (built RelWithDebInfo).")
    return (f"*Measured {res['date']} at commit {res['commit']} by `{res.get('runner', 'bench/run.sh')}` on {m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB), "
            f"{m['compiler']}, torch {res['torch']}. Commands: {cmds}.{build_type}*")


def render_section(name):
    with open(os.path.join(RESULTS, name + ".json")) as f:
        res = json.load(f)
    return caption(res) + "\n\n" + RENDERERS[name](res["data"])


BLOCK = re.compile(r"(<!-- bench:(\w+) -->\n)(.*?)(<!-- /bench:\2 -->)", re.S)


def render_doc(text):
    def sub(m):
        name = m.group(2)
        if not os.path.exists(os.path.join(RESULTS, name + ".json")):
            return m.group(0)
        return m.group(1) + render_section(name) + "\n" + m.group(4)
    return BLOCK.sub(sub, text)


def check():
    """Every table of the doc is inside a bench block with a command in its caption, and the doc is what
    the results render (nobody edited a figure by hand, nobody forgot to commit a re-run)."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    problems = []
    spans = [(m.start(), m.end(), m.group(2)) for m in BLOCK.finditer(text)]
    pos = 0
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("|") and not any(s <= pos < e for s, e, _ in spans):
            problems.append(f"docs/performance.md:{i}: a table outside a generated block: {line[:80]}")
        pos += len(line) + 1
    opened = re.findall(r"<!-- bench:(\w+) -->", text)
    if len(opened) != len(spans):
        problems.append(f"{len(opened)} bench: markers but {len(spans)} closed blocks")
    for s, e, name in spans:
        block = text[s:e]
        if name not in RENDERERS:
            problems.append(f"block {name}: no such section in bench/run.py")
        elif not re.search(r"Commands: `[^`]+`", block):
            problems.append(f"block {name}: its caption names no command")
        elif not os.path.exists(os.path.join(RESULTS, name + ".json")):
            problems.append(f"block {name}: bench/results/{name}.json is missing")
    if not problems and render_doc(text) != text:
        problems.append("docs/performance.md differs from what bench/results/ renders: run `python bench/run.py --render-only`")
    for p in problems:
        print(p)
    print("performance doc: every table generated" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default build/)")
    ap.add_argument("--python", default=sys.executable, help="the venv's Python (make_bench_graphs.py, torch version)")
    ap.add_argument("--sections", default=",".join(DEFAULT_SECTIONS), help=f"comma-separated, of {', '.join(ALL_SECTIONS)}")
    ap.add_argument("--render-only", action="store_true", help="render the doc from bench/results/ without running anything")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the doc is what bench/results/ renders")
    a = ap.parse_args()
    if a.check:
        return check()
    if not a.render_only:
        sections = [s for s in a.sections.split(",") if s]
        unknown = [s for s in sections if s not in SECTION_FUNCS]
        if unknown:
            sys.exit(f"bench/run.py: unknown section(s) {', '.join(unknown)}; known: {', '.join(ALL_SECTIONS)}")
        os.makedirs(RESULTS, exist_ok=True)
        info = {"machine": machine(), "torch": torch_version(a.python), "commit": commit()}
        for name in sections:
            print(f"==> {name}", file=sys.stderr, flush=True)
            r = Runner(a.build)
            data = SECTION_FUNCS[name](r, a)
            build_type = next((v["context"].get("library_build_type") for v in data.values()
                               if isinstance(v, dict) and "context" in v), None)
            res = {"section": name, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"), **info,
                   "benchmark_library_build_type": build_type, "commands": r.commands, "data": data}
            with open(os.path.join(RESULTS, name + ".json"), "w") as f:
                json.dump(res, f, indent=1, sort_keys=True)
                f.write("\n")
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    new = render_doc(text)
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(new)
    print(f"docs/performance.md: {len(BLOCK.findall(new))} generated tables", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
