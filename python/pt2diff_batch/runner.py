"""One case: `pt2diff inspect --json` (nodes, memory estimate, whether it loads), then `pt2diff GRAPH INPUTS
--json --html` in a session of its own, killed whole (compiler workers included) past the case timeout; then its row.

run_case() is what a local worker thread and a Ray task both call, so a case gives the same row either way.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time

from .rows import make_row

# The pt2diff flags that change what `inspect` loads or binds (the rest only concern the diff), with
# whether each takes a value.
_INSPECT_FLAGS = {"--model": True, "--load-library": True, "--random-inputs": False, "--seed": True}
# Flags batch sets itself for every case.
RESERVED_FLAGS = ("--json", "--html")


class CaseConfig:
    """What every case of a batch shares: the pt2diff binary, the Inductor cache, the case timeout (seconds,
    0 for none), the intra-op threads of each case (OMP_NUM_THREADS), and a memory gate (None: none)."""

    def __init__(self, pt2diff, cache_dir, timeout, threads, gate=None, gpus=None):
        self.pt2diff = pt2diff
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.threads = threads
        self.gate = gate
        self.gpus = gpus  # GpuSlots of the local pool (None: Ray, which gives a task its GPU, or no GPU here)

    def to_dict(self):
        return {"pt2diff": self.pt2diff, "cache_dir": self.cache_dir, "timeout": self.timeout, "threads": self.threads}


class MemoryGate:
    """Starts a case only when its estimate fits in MemAvailable minus what running cases reserved; a case
    starts regardless when nothing else runs (pt2diff itself then refuses a run that cannot fit)."""

    def __init__(self, base_bytes, available=None):
        self.base = base_bytes  # what a case needs beyond its values: pt2diff and a compiler worker
        self.available = available or available_memory
        self.reserved = 0
        self.running = 0
        self.waits = 0  # how many times a case waited for memory (reported in the summary)
        self._cond = threading.Condition()

    def acquire(self, estimate):
        need = self.base + max(0, int(estimate or 0))
        with self._cond:
            waited = False
            while self.running > 0:
                free = self.available()
                if free is None or free - self.reserved >= need:
                    break
                waited = True
                self._cond.wait(0.5)  # memory is freed by cases ending (notify) or by other programs (poll)
            self.waits += waited
            self.reserved += need
            self.running += 1
        return need

    def release(self, need):
        with self._cond:
            self.reserved -= need
            self.running -= 1
            self._cond.notify_all()


def visible_gpus(environ=None):
    """The GPUs cases may use on this machine, as CUDA_VISIBLE_DEVICES names them: that variable's list when it
    is set, else one index per GPU `nvidia-smi -L` lists, else none."""
    environ = os.environ if environ is None else environ
    if "CUDA_VISIBLE_DEVICES" in environ:
        return [g.strip() for g in environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip() and not g.strip().startswith("-")]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(l for l in listed.stdout.splitlines() if l.startswith("GPU "))] \
        if listed.returncode == 0 else []


def runs_on_gpu(options, export_device):
    """Whether a case's diff runs on a GPU: its --device when given, else where its graph was exported (the CLI's
    default device; `pt2diff inspect --json`'s export_device)."""
    device = None
    for i, o in enumerate(options):
        if o == "--device" and i + 1 < len(options):
            device = options[i + 1]
        elif o.startswith("--device="):
            device = o.split("=", 1)[1]
    return (device or export_device or "cpu").startswith("cuda")


class GpuSlots:
    """One GPU per running GPU case: acquire() blocks until one of `gpus` is free and returns it (the case runs
    with CUDA_VISIBLE_DEVICES set to it, so it sees that GPU as cuda:0); release() gives it back. At most as many
    GPU cases run at once as there are GPUs; CPU cases do not wait here."""

    def __init__(self, gpus):
        self.free = list(gpus)
        self._cond = threading.Condition()

    def __bool__(self):
        return True

    def acquire(self):
        with self._cond:
            while not self.free:
                self._cond.wait()
            return self.free.pop(0)

    def release(self, gpu):
        with self._cond:
            self.free.append(gpu)
            self._cond.notify()


def available_memory():
    """MemAvailable from /proc/meminfo in bytes, or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def inspect_flags(options):
    """The subset of a case's pt2diff flags that `pt2diff inspect` takes."""
    out, i = [], 0
    while i < len(options):
        flag = options[i].split("=", 1)[0]
        if flag in _INSPECT_FLAGS:
            takes_value = _INSPECT_FLAGS[flag] and "=" not in options[i]
            out += options[i:i + 1 + takes_value]
            i += 1 + takes_value
        else:
            i += 1
    return out


_running = set()  # process groups of the cases running now (kill_running() ends them on an interrupt)
_running_lock = threading.Lock()


def session_members(sid):
    """The pids of the processes in session `sid` (/proc/PID/stat). A case runs in a session of its own:
    pt2diff puts each compiler worker in a process group of its own, inside that session."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
                members.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return members


def kill_session(sid):
    """SIGKILL to every process of session `sid`: pt2diff, its compiler workers and what they started."""
    for pid in session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_running():
    """Kills every case running in this process, workers included (the driver was interrupted)."""
    with _running_lock:
        sessions = list(_running)
    for sid in sessions:
        kill_session(sid)


def _run(cmd, timeout, env, stdout, stderr):
    """Runs cmd in a new session; past `timeout` seconds (0: none) kills the whole session (its compiler
    workers are process groups of their own in it). Returns (returncode, timed_out, seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    with _running_lock:
        _running.add(proc.pid)
    try:
        rc = proc.wait(timeout=timeout or None)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        rc = proc.wait()
        timed_out = True
    finally:
        kill_session(proc.pid)  # a compiler worker or C++ compiler left behind by a crash dies too
        with _running_lock:
            _running.discard(proc.pid)
    return rc, timed_out, time.perf_counter() - start


def _tail(path, limit=4000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_case(case, config, workdir):
    """Diagnoses `case` (a cases.Case) writing report.json, report.html, stdout.txt and stderr.txt into
    `workdir`; returns its row (rows.make_row). Never raises for anything the case does."""
    os.makedirs(workdir, exist_ok=True)
    started = time.time()
    env = dict(os.environ, OMP_NUM_THREADS=str(config.threads))
    # The Inductor worker prefers TORCHINDUCTOR_CACHE_DIR to --inductor-cache (torch.compile in the calling
    # program sets it): without it every case shares config.cache_dir, or the --inductor-cache it was given.
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    run = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
    with open(os.path.join(workdir, "run.json"), "w") as f:
        json.dump(run, f)
    if case.failure:  # nothing to run: the capture could not export this graph
        return make_row(case, inspect=None, returncode=None, timed_out=False, report=None, stderr="",
                        seconds=0.0, inspect_seconds=0.0, timeout=config.timeout)

    # 1. inspect: nodes, the memory estimate, and whether the archive loads at all (cheap: no compile).
    inspect_json = os.path.join(workdir, "inspect.json")
    inspect_cmd = [config.pt2diff, "inspect", "--json", case.graph] + ([case.inputs] if case.inputs else []) + inspect_flags(case.options)
    with open(inspect_json, "wb") as out, open(os.path.join(workdir, "inspect_stderr.txt"), "wb") as err:
        rc, timed_out, inspect_seconds = _run(inspect_cmd, config.timeout, env, out, err)
    inspect = None
    if rc in (0, 2) and not timed_out:
        try:
            with open(inspect_json) as f:
                inspect = json.load(f)
        except (OSError, ValueError):
            inspect = None
    if inspect is None or timed_out or rc not in (0,):
        # It does not load (or its inputs do not bind): the diff would stop at the same line. No diff run.
        return make_row(case, inspect=inspect, returncode=rc, timed_out=timed_out, report=None,
                        stderr=_tail(os.path.join(workdir, "inspect_stderr.txt")), seconds=0.0,
                        inspect_seconds=inspect_seconds, timeout=config.timeout, stage="inspect")

    # 2. the diff, once its memory is free and, for a case that runs on a GPU, a GPU of its own (local pool; a Ray
    # task that asked for one has it in CUDA_VISIBLE_DEVICES already).
    estimate = (inspect.get("memory") or {}).get("bytes", 0)
    on_gpu = runs_on_gpu(case.options, inspect.get("export_device"))
    gpu = config.gpus.acquire() if config.gpus and on_gpu else None
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if on_gpu and env.get("CUDA_VISIBLE_DEVICES"):  # the case's GPU, in DIR/cases/KEY/run.json (not the row: it varies)
        run["gpu"] = env["CUDA_VISIBLE_DEVICES"]
    run["diff_started"] = time.time()
    need = config.gate.acquire(estimate) if config.gate else 0
    try:
        report_path = os.path.join(workdir, "report.json")
        cmd = [config.pt2diff, case.graph] + ([case.inputs] if case.inputs else []) + list(case.options)
        if not any(o.split("=", 1)[0] == "--inductor-cache" for o in case.options):
            cmd += ["--inductor-cache", config.cache_dir]
        cmd += ["--json", report_path, "--html", os.path.join(workdir, "report.html")]
        with open(os.path.join(workdir, "stdout.txt"), "wb") as out, open(os.path.join(workdir, "stderr.txt"), "wb") as err:
            rc, timed_out, seconds = _run(cmd, config.timeout, env, out, err)
    finally:
        run["diff_finished"] = time.time()  # before the GPU goes to the next case
        if config.gate:
            config.gate.release(need)
        if gpu is not None:
            config.gpus.release(gpu)
        with open(os.path.join(workdir, "run.json"), "w") as f:
            json.dump(run, f)
    report = None
    if not timed_out:
        try:
            with open(report_path) as f:
                report = json.load(f)
        except (OSError, ValueError):
            report = None
    return make_row(case, inspect=inspect, returncode=rc, timed_out=timed_out, report=report,
                    stderr=_tail(os.path.join(workdir, "stderr.txt")), seconds=seconds,
                    inspect_seconds=inspect_seconds, timeout=config.timeout, stage="diff")
