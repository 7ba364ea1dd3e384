"""`pt2diff batch SOURCE... --out DIR [batch options] [-- pt2diff options]`: the driver (docs/batch.md).

Exit codes: 0 every case agrees; 1 a case diverged or could not be diagnosed (its row says why); 2 a
problem with the command line, a SOURCE or DIR (one line on stderr); 3 an internal error of the batch.
"""
import argparse
import os
import sys
import threading
import time

from . import summary as summary_mod
from .cases import SourceError, assign_keys, discover
from .executors import run_local, run_ray
from .progress import Progress
from .rows import RERUN_ON_RESUME, occurrence
from .runner import RESERVED_FLAGS, CaseConfig, GpuSlots, MemoryGate, available_memory, kill_running, visible_gpus
from .store import Store, StoreError, write_atomic

GIB = 1 << 30


class UsageError(Exception):
    """A command line batch cannot run: one line for the user."""


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        if text and text[-1].upper() in units:
            return int(float(text[:-1]) * units[text[-1].upper()])
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (16G, 512M, bytes)") from None


def parser():
    p = argparse.ArgumentParser(
        prog="pt2diff batch",
        description="Diagnose every graph of a corpus: capture directories (index.json), manifests "
                    "(GRAPH<TAB>INPUTS[<TAB>OPTIONS] lines) or folders of .pt2. Options after -- go to every case's "
                    "`pt2diff GRAPH INPUTS` (docs/cli.md).")
    p.add_argument("sources", nargs="+", metavar="SOURCE")
    p.add_argument("--out", required=True, metavar="DIR", help="where the per-case reports and the summary go")
    p.add_argument("--jobs", type=int, default=0, help="cases run at once on this machine (default: sized to its CPUs and memory)")
    p.add_argument("--threads-per-case", type=int, default=0,
                   help="OMP_NUM_THREADS of each case (default: CPUs / jobs locally, --ray-cpus on Ray)")
    p.add_argument("--case-timeout", type=float, default=1800, metavar="S",
                   help="seconds a case may take before its process group is killed and it is reported hung (0: none; default 1800)")
    p.add_argument("--case-memory", type=parse_size, default=GIB, metavar="SIZE",
                   help="memory a case needs besides its values' estimate (pt2diff and a compiler worker; default 1G)")
    p.add_argument("--resume", action="store_true", help="continue the batch in DIR: finished cases are kept, the rest run")
    p.add_argument("--ray", metavar="ADDRESS", help="run the cases as Ray tasks on the cluster at ADDRESS ('auto': this machine's)")
    p.add_argument("--ray-cpus", type=float, default=1, help="CPUs each Ray task asks for (default 1)")
    p.add_argument("--ray-gpus", type=float, default=None,
                   help="GPUs each Ray task asks for (default: 1 for a case that runs on a GPU when the cluster has GPUs, "
                        "else 0)")
    p.add_argument("--ray-ship", action="store_true",
                   help="send archives and inputs through Ray's object store (default: every node reads the paths)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="the progress line on stderr (auto: when stderr is a terminal)")
    p.add_argument("--pt2diff", required=True, help=argparse.SUPPRESS)  # the binary, passed by `pt2diff batch`
    return p


def default_jobs():
    cpus = os.cpu_count() or 1
    free = available_memory()
    by_memory = max(1, free // (2 * GIB)) if free else cpus
    return max(1, min(cpus, by_memory))


def split_argv(argv):
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def check_options(options, where):
    for o in options:
        if o.split("=", 1)[0] in RESERVED_FLAGS:
            raise UsageError(f"{where}: {o.split('=', 1)[0]} is set by batch for every case (DIR/cases/*/report.*); remove it")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    own, case_options = split_argv(argv)
    args = parser().parse_args(own)
    try:
        return run(args, case_options)
    except (UsageError, SourceError, StoreError) as e:
        print(f"pt2diff batch: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kill_running()
        print("pt2diff batch: interrupted; finished cases are kept: rerun with --resume", file=sys.stderr)
        return 130


def run(args, case_options):
    start = time.monotonic()
    if args.jobs < 0 or args.threads_per_case < 0 or args.case_timeout < 0:
        raise UsageError("--jobs, --threads-per-case and --case-timeout take a number >= 0")
    check_options(case_options, "the options after --")
    cases = discover(args.sources, case_options)
    for case in cases:
        check_options(case.options, case.source)
    first = assign_keys(cases)
    store = Store(args.out)
    request = {"sources": [os.path.abspath(s) for s in args.sources], "options": case_options}
    store.open(request, args.resume)

    rows = {}
    for key in first:
        row = store.finished(key) if args.resume else None
        if row is not None and row.get("failure") not in RERUN_ON_RESUME:  # a lost worker's case runs again
            rows[key] = row
    todo = [case for key, case in first.items() if key not in rows]

    if args.ray:
        executor, jobs = "ray", None
        threads = args.threads_per_case or max(1, int(args.ray_cpus))
    else:
        executor = "local"
        jobs = args.jobs or default_jobs()
        threads = args.threads_per_case or max(1, (os.cpu_count() or 1) // jobs)
    gate = None if args.ray else MemoryGate(args.case_memory)
    # The local pool gives each GPU case one of this machine's GPUs (CUDA_VISIBLE_DEVICES); Ray gives its tasks theirs.
    gpus = None if args.ray else (visible_gpus() or None)
    config = CaseConfig(args.pt2diff, store.cache_dir, args.case_timeout, threads, gate, GpuSlots(gpus) if gpus else None)

    enabled = {"auto": None, "always": True, "never": False}[args.progress]
    progress = Progress(len(todo), enabled=enabled)
    lock = threading.Lock()

    def document(complete):
        ordered = [occurrence(rows[c.key], c, first[c.key].name) for c in cases if c.key in rows]
        return summary_mod.build(ordered, sources=args.sources, options=case_options, executor=executor,
                                 jobs=jobs if jobs is not None else "ray", wall_seconds=time.monotonic() - start,
                                 unique=len(first), complete=complete)

    def write(complete):
        doc = document(complete)
        write_atomic(os.path.join(store.out, "summary.json"), summary_mod.to_json(doc))
        write_atomic(os.path.join(store.out, "summary.csv"), summary_mod.to_csv(doc))
        write_atomic(os.path.join(store.out, "summary.txt"), summary_mod.to_text(doc))
        write_atomic(os.path.join(store.out, "index.html"), summary_mod.to_html(doc))
        return doc

    def finish(case, attempt, row, files):
        with lock:
            rows[case.key] = store.publish(case.key, attempt, row, files)
            write(complete=False)
            progress.finished(row["failure"] is not None)

    write(complete=not todo)
    try:
        if args.ray:
            run_ray(todo, store, config, args.ray, finish, cpus=args.ray_cpus, gpus=args.ray_gpus, ship=args.ray_ship,
                    on_start=progress.started)
        else:
            run_local(todo, store, config, jobs, finish, on_start=progress.started)
    finally:
        progress.clear()
    doc = write(complete=True)
    sys.stdout.write(summary_mod.to_text(doc))
    print(f"summary: {os.path.join(store.out, 'summary.json')}, index: {os.path.join(store.out, 'index.html')}")
    all_agree = all(r["verdict"] == "agree" and not r["failure"] for r in doc["cases"])
    return 0 if all_agree else 1
