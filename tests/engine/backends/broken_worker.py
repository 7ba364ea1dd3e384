#!/usr/bin/env python3
"""A deliberately broken compiler worker for pt2diff's tests (docs/worker-protocol.md).

    broken_worker.py MODE [STATE_DIR]

MODE says how it breaks:
  crash        kill itself with SIGKILL when asked to compile (like a compiler segfault or the OOM killer),
               every time; the same as die_at_compile
  die_at_OP    kill itself with SIGKILL on receiving request OP (hello, load, compile, run), every time
  segfault     crash with SIGSEGV in native code when asked to compile, under faulthandler (as
               pt2diff_worker runs), every time
  crash_once   die the first time; on restart become the real Inductor worker (needs STATE_DIR)
  hang         never answer a compile
  hang_with_child  the same, after starting a subprocess of its own that sleeps (a compiler's helper)
  error        answer compile_failed with a message
  garbage      print a line that is not JSON
  old_protocol answer hello with protocol 0
Modes that answer `run` (compile answers ok and does nothing):
  outputs          copy the file $BROKEN_WORKER_OUTPUT to outputs_file: an honest worker when it holds the
                   region's real outputs, a wrong one when the test wrote a wrong shape, dtype or count there
  slow_run         the same after sleeping $BROKEN_WORKER_DELAY seconds
  truncated_output copy it, then cut the file in half (a worker that died or ran out of disk mid-write)
  short_storage    copy it with its tensor's storage record cut in half: a zip that reads, holding a
                   tensor that reaches past the bytes of its storage
  not_torch_save   write a text file instead
  no_output        write nothing, answer ok
  fsize_limit      limit its file size (RLIMIT_FSIZE) below the output's, SIGXFSZ ignored (as Python does), so
                   the write fails with EFBIG (as torch.save does when the disk fills up): answered
                   worker_error, as pt2diff_worker's serve() answers any exception
  fsize_signal     the same limit with SIGXFSZ at its default action (a C++ worker's): the write kills it
$BROKEN_WORKER_RECORD (optional) names a file it appends "worker PID DIR LITTER" to when it starts, DIR the
engine's private directory (where its stderr goes), LITTER a directory it makes in its TMPDIR and never
removes (as a compiler's or AOTI loader's temporary files, left by a killed worker), and "child PID" for each
subprocess it starts.
It needs no torch.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import zipfile

mode = sys.argv[1]
state = sys.argv[2] if len(sys.argv) > 2 else None
record = os.environ.get("BROKEN_WORKER_RECORD")


def note(line):
    if record:
        with open(record, "a") as f:
            f.write(line + "\n")


if mode == "crash_once" and state and os.path.exists(os.path.join(state, "crashed")):
    worker = os.path.join(os.path.dirname(__file__), "..", "..", "..", "engine", "backends", "inductor_worker.py")
    os.execv(sys.executable, [sys.executable, worker] + sys.argv[3:])

if record:  # the engine's directory is where it sends this process's stderr; litter in its TMPDIR, never removed
    import tempfile
    note(f"worker {os.getpid()} {os.path.dirname(os.readlink('/proc/self/fd/2'))} {tempfile.mkdtemp(prefix='litter-')}")
die_at = mode[len("die_at_"):] if mode.startswith("die_at_") else "compile" if mode in ("crash", "crash_once") else None


def short_storage(source, target):
    """`source` rewritten with every storage record (archive/data/N) cut to half its bytes."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if "/data/" in item.filename and not item.filename.endswith(".pkl"):
                data = data[:len(data) // 2]
            zout.writestr(item, data)


def run(req):
    """Writes the outputs as MODE says; a failed write raises, as torch.save would."""
    out, source = req["outputs_file"], os.environ.get("BROKEN_WORKER_OUTPUT", "")
    if mode == "slow_run":
        time.sleep(float(os.environ.get("BROKEN_WORKER_DELAY", "1")))
    if mode in ("fsize_limit", "fsize_signal"):
        # Python ignores SIGXFSZ from the start (a write past the limit fails with EFBIG); a C++ compiler does not.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if mode == "fsize_limit" else signal.SIG_DFL)
        limit = os.path.getsize(source) // 2
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    if mode == "not_torch_save":
        with open(out, "w") as f:
            f.write("these are not the tensors you are looking for\n")
    elif mode == "short_storage":
        short_storage(source, out)
    elif mode != "no_output":
        shutil.copyfile(source, out)
    if mode == "truncated_output":
        os.truncate(out, os.path.getsize(out) // 2)


def compile_natively():
    """A segfault in native code, as a compiler's or a package runtime's would be."""
    import ctypes
    ctypes.string_at(0)


if mode == "segfault":
    import faulthandler
    faulthandler.enable()

for line in sys.stdin:
    req = json.loads(line)
    reply = {"id": req.get("id"), "ok": True, "seconds": 0.0}
    op = req.get("op")
    if op == die_at:
        if state:
            open(os.path.join(state, "crashed"), "w").close()
        print(f"broken_worker: about to die while {'compiling' if op == 'compile' else 'answering ' + op}",
              file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if op == "compile" and mode == "segfault":
        compile_natively()
    if op == "hello":
        reply.update({"worker": "broken", "protocol": 0 if mode == "old_protocol" else 1})
    elif op == "compile":
        if mode == "hang_with_child":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            note(f"child {child.pid}")
        if mode in ("hang", "hang_with_child"):
            time.sleep(3600)
        if mode == "garbage":
            print("this is not JSON", flush=True)
            continue
        if mode == "error":
            reply = {"id": req.get("id"), "ok": False, "error": "compile_failed",
                     "message": "LoweringException: no lowering for aten.frobnicate", "seconds": 0.0}
    elif op == "run":
        try:
            run(req)
        except Exception as e:  # noqa: BLE001 - as pt2diff_worker.protocol.serve answers a worker's exception
            reply = {"id": req.get("id"), "ok": False, "error": "worker_error",
                     "message": f"{type(e).__name__}: {e}", "seconds": 0.0}
    elif op == "shutdown":
        print(json.dumps(reply), flush=True)
        break
    print(json.dumps(reply), flush=True)
