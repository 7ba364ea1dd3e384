#!/usr/bin/env python3
"""A deliberately broken compiler worker for pt2diff's tests (docs/worker-protocol.md).

    broken_worker.py MODE [STATE_DIR]

MODE says how it breaks when asked to compile:
  crash        kill itself with SIGKILL (like a compiler segfault or the OOM killer), every time
  crash_once   die the first time; on restart become the real Inductor worker (needs STATE_DIR)
  hang         never answer
  error        answer compile_failed with a message
  garbage      print a line that is not JSON
  old_protocol answer hello with protocol 0
It needs no torch: it never gets as far as compiling anything.
"""
import json
import os
import signal
import sys
import time

mode = sys.argv[1]
state = sys.argv[2] if len(sys.argv) > 2 else None

if mode == "crash_once" and state and os.path.exists(os.path.join(state, "crashed")):
    worker = os.path.join(os.path.dirname(__file__), "..", "..", "..", "engine", "backends", "inductor_worker.py")
    os.execv(sys.executable, [sys.executable, worker] + sys.argv[3:])

for line in sys.stdin:
    req = json.loads(line)
    reply = {"id": req.get("id"), "ok": True, "seconds": 0.0}
    op = req.get("op")
    if op == "hello":
        reply.update({"worker": "broken", "protocol": 0 if mode == "old_protocol" else 1})
    elif op == "compile":
        if mode in ("crash", "crash_once"):
            if state:
                open(os.path.join(state, "crashed"), "w").close()
            print("broken_worker: about to die while compiling", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "hang":
            time.sleep(3600)
        if mode == "garbage":
            print("this is not JSON", flush=True)
            continue
        if mode == "error":
            reply = {"id": req.get("id"), "ok": False, "error": "compile_failed",
                     "message": "LoweringException: no lowering for aten.frobnicate", "seconds": 0.0}
    elif op == "shutdown":
        print(json.dumps(reply), flush=True)
        break
    print(json.dumps(reply), flush=True)
