"""Where cases run: threads driving pt2diff processes on this machine, or Ray tasks on a cluster.

Both call runner.run_case() on a case and hand the row to `finish(case, attempt, row, files)`, which
publishes it (store.Store.publish) as soon as that case is done.
"""
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from .rows import make_row
from .runner import CaseConfig, run_case, runs_on_gpu


def _start(store, case):
    return store.start_attempt(case.key, {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})


def run_local(cases, store, config, jobs, finish, on_start=None):
    """Runs `cases` (cases.Case, one per key) on `jobs` threads, each driving one pt2diff process at a time;
    `config.gate` keeps cases that would not fit in memory from starting."""
    def one(case):
        attempt = _start(store, case)
        if on_start:
            on_start(case)
        return case, attempt, run_case(case, config, attempt)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, case) for case in cases]
        for future in concurrent.futures.as_completed(futures):
            case, attempt, row = future.result()
            finish(case, attempt, row, None)


def _remote_case(case_dict, config_dict, graph_bytes, inputs_bytes):
    """The body of a Ray task: the case run by runner.run_case() in a temporary directory of the node, its
    files returned to the driver. With `graph_bytes`/`inputs_bytes` (shipped through the object store)
    the archive and inputs are written there first; otherwise the node reads the paths in the case."""
    from .cases import Case
    case = Case.from_dict(case_dict)
    original = Case.from_dict(case_dict)
    config = CaseConfig(**config_dict)
    work = tempfile.mkdtemp(prefix="pt2diff-batch-")
    try:
        if graph_bytes is not None:
            case.graph = _write(work, os.path.basename(case.graph), graph_bytes)
        if inputs_bytes is not None:
            case.inputs = _write(work, "inputs-" + os.path.basename(case.inputs), inputs_bytes)
        attempt = os.path.join(work, "attempt")
        row = run_case(case, config, attempt)
        for copy, path in ((case.graph, original.graph), (case.inputs, original.inputs)):
            if copy and path and copy != path:  # the one line names the file the user has, not the node's copy
                row["message"] = row["message"].replace(copy, path)
        files = {}
        for name in os.listdir(attempt):
            with open(os.path.join(attempt, name), "rb") as f:
                files[name] = f.read()
        return row, files
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _write(folder, name, data):
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def export_device(case, config):
    """Where the case's graph was exported (`pt2diff inspect --json GRAPH`'s export_device), read on the driver
    to choose a Ray task's resources; "cpu" when it cannot be read (the task then reports why)."""
    if not case.graph:
        return "cpu"
    try:
        run = subprocess.run([config.pt2diff, "inspect", "--json", case.graph], capture_output=True, text=True, timeout=120)
        return json.loads(run.stdout).get("export_device", "cpu") if run.returncode == 0 else "cpu"
    except (OSError, subprocess.SubprocessError, ValueError):
        return "cpu"


def lost_row(error, task_error_type):
    """The failure and message of a case whose Ray task gave `error` instead of a row. The task's own code
    raised (a `task_error_type`, RayTaskError): `crashed`. Anything else (WorkerCrashedError, NodeDiedError,
    ObjectLostError, OwnerDiedError...) means Ray lost the process or node running it: `worker_lost`,
    which --resume runs again."""
    last = (str(error).strip().splitlines() or [type(error).__name__])[-1]
    if isinstance(error, task_error_type):
        return {"failure": "crashed", "message": "the Ray task failed: " + last}
    return {"failure": "worker_lost", "message": f"Ray lost the worker running it ({type(error).__name__}: {last[:300]}): "
                                                 "rerun with --resume"}


def run_ray(cases, store, config, address, finish, *, cpus=1, gpus=None, ship=False, on_start=None):
    """Runs `cases` as Ray tasks on the cluster at `address` ("auto": the one this machine belongs to),
    each asking for `cpus` CPUs and `gpus` GPUs. gpus=None (the default): one GPU for a case that runs on a
    GPU (its --device, else its export device) when the cluster has GPUs, none for the others; Ray then gives
    the task its GPU in CUDA_VISIBLE_DEVICES, and runs at once as many GPU cases as the cluster has GPUs.
    ship=False: every node reads the cases' paths (a shared filesystem); ship=True: each archive and inputs
    file goes through Ray's object store (once per file). The pt2diff binary must be at config.pt2diff on
    every node."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs the ray package in this Python: pip install 'pt2diff-capture[ray]' (or pip install ray)") from None
    package = os.path.dirname(os.path.abspath(__file__))
    ray.init(address=address, runtime_env={"py_modules": [package]}, log_to_driver=False, logging_level="ERROR")
    try:
        task = ray.remote(_remote_case)
        cluster_gpus = ray.cluster_resources().get("GPU", 0)

        def gpus_of(case):
            if gpus is not None:
                return gpus
            return 1 if cluster_gpus >= 1 and runs_on_gpu(case.options, export_device(case, config)) else 0
        shipped = {}

        def ref(path):
            if not ship or path is None:
                return None
            if path not in shipped:
                shipped[path] = ray.put(_read(path)) if os.path.isfile(path) else None
            return shipped[path]

        pending = {}
        config_dict = config.to_dict()
        for case in cases:
            attempt = _start(store, case)
            if on_start:
                on_start(case)
            if case.failure:  # nothing to send anywhere
                finish(case, attempt, run_case(case, CaseConfig(**config_dict), attempt), None)
                continue
            pending[task.options(num_cpus=cpus, num_gpus=gpus_of(case), max_retries=0).remote(case.to_dict(), config_dict, ref(case.graph),
                                                                ref(case.inputs))] = (case, attempt)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            case, attempt = pending.pop(done[0])
            try:
                row, files = ray.get(done[0])
            except Exception as e:  # noqa: BLE001 - the task's code raised, or its worker or node was lost
                row, files = make_row(case, inspect=None, returncode=None, timed_out=False, report=None, stderr="",
                                      seconds=0.0, inspect_seconds=0.0, timeout=config.timeout), None
                row.update(lost_row(e, ray.exceptions.RayTaskError))
            # The row names the driver's paths, whatever the node saw.
            row.update(graph=case.graph, inputs=case.inputs)
            finish(case, attempt, row, files)
    finally:
        ray.shutdown()
