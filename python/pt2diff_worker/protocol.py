"""The worker protocol's request loop (docs/worker-protocol.md), for any worker written in Python.

One JSON request per line in, one JSON reply per line out, in order. A handler answers each `op` with a
dict of reply fields, or raises `Failure(kind, message)` for a typed error reply; any other exception is
answered `worker_error`, its traceback going to stderr. This module needs no torch.
"""
import json
import os
import sys
import time
import traceback
from collections.abc import Mapping

PROTOCOL = 1

#: The requests a handler may answer (by a method of the same name); `shutdown` is the loop's own.
OPS = ("hello", "load", "compile", "run", "export", "forget")


class Failure(Exception):
    """A typed failure: `kind` is one of the protocol's error kinds."""

    def __init__(self, kind, message, details=None):
        super().__init__(message)
        self.kind = kind
        self.details = details


def first_line(text):
    """The first non-blank line of `text`, stripped (the text itself when it has none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text


def describe(e):
    """One line naming what the compiler said: Dynamo's BackendCompilerFailed ("backend='inductor'
    raised:") is unwrapped to the exception inside it, and a C++ compile error names the compiler's
    first error line."""
    inner = getattr(e, "inner_exception", None)
    if inner is not None:
        e = inner
    text = str(e)
    line = f"{type(e).__name__}: {first_line(text)}"
    if first_line(text).startswith("[enforce fail"):  # c10's check header, then the failed condition: the words follow
        words = text.split("]", 1)[-1].strip()
        words = words.split(". ", 1)[-1] if ". " in words else words  # "err == 0. DefaultCPUAllocator: ..."
        line = f"{type(e).__name__}: {first_line(words)}"
    errors = [l.strip() for l in text.splitlines() if " error: " in l]
    return f"{line}: {errors[0]}" if errors else line


#: What allocators say when an allocation fails: Python's MemoryError, torch's CPU allocator
#: ("DefaultCPUAllocator: not enough memory"/"can't allocate memory"), CUDA's OutOfMemoryError, and a C++
#: compiler the worker started that ran past the same limit ("virtual memory exhausted", "out of memory").
_OUT_OF_MEMORY = ("not enough memory", "can't allocate memory", "out of memory", "virtual memory exhausted",
                  "cannot allocate memory", "std::bad_alloc")


def failure_kind(e, otherwise):
    """The protocol's error kind for exception `e`: "out_of_memory" when an allocation failed (the worker
    runs under the engine's memory limit, RLIMIT_DATA), else `otherwise` ("compile_failed", "run_failed")."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":
            return "out_of_memory"
        if any(s in str(e).lower() for s in _OUT_OF_MEMORY):
            return "out_of_memory"
        e = getattr(e, "inner_exception", None) or e.__cause__ or e.__context__
    return otherwise


def protocol_channel():
    """Takes stdout for the protocol: returns a line-buffered text file on a duplicate of file descriptor
    1, then points descriptor 1 at stderr, so that whatever else writes to stdout (a print, a C++ library,
    a compiler subprocess) lands in the worker's log instead of corrupting the replies.

    Call it once, before importing anything that might print; `serve()` calls it when given no `replies`."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return channel


def _handlers(handler):
    if isinstance(handler, Mapping):
        return {op: fn for op, fn in handler.items() if op != "shutdown"}
    return {op: getattr(handler, op) for op in OPS if callable(getattr(handler, op, None))}


def serve(handler, requests=None, replies=None):
    """Answers requests until `shutdown` or the end of input.

    `handler`: an object with a method per op it answers (`hello`, `load`, `compile`, `run`, `export`,
    `forget`; each takes the request dict and returns a dict of reply fields, or None for none), or a dict
    op -> callable.
    An op it lacks is answered `bad_request` ("unknown op '...'"). `requests`: an iterable of lines
    (default: sys.stdin). `replies`: a text file for the replies (default: `protocol_channel()`, which
    also moves everything else written to stdout over to stderr). Every reply carries the request's
    `id`, `ok` and `seconds`; a failure's `details` (a traceback) is written to stderr, not sent."""
    handlers = _handlers(handler)
    if requests is None:
        requests = sys.stdin
    if replies is None:
        replies = protocol_channel()
    for line in requests:
        if not line.strip():
            continue
        start = time.perf_counter()
        reply = {}
        try:
            req = json.loads(line)
            reply["id"] = req.get("id")
            op = req.get("op")
            if op == "shutdown":
                replies.write(json.dumps({"id": reply["id"], "ok": True, "seconds": 0.0}) + "\n")
                replies.flush()
                return
            fn = handlers.get(op)
            if fn is None:
                raise Failure("bad_request", f"unknown op '{op}'")
            reply.update(fn(req) or {})
            reply["ok"] = True
        except Failure as f:
            reply.update({"ok": False, "error": f.kind, "message": first_line(str(f))})
            if f.details:
                reply["details"] = f.details
        except Exception as e:  # noqa: BLE001 - a bug in the worker is reported, never a silent death
            reply.update({"ok": False, "error": "worker_error", "message": f"{type(e).__name__}: {first_line(str(e))}",
                          "details": traceback.format_exc()})
        reply["seconds"] = time.perf_counter() - start
        if not reply["ok"] and reply.get("details"):
            print(reply["details"], file=sys.stderr, flush=True)  # the full story, in the worker's log
            del reply["details"]
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
