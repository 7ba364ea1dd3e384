"""The worker server: one Python that has imported torch and Inductor once, forking a worker for each request.

A worker's start is mostly its imports: 3.4-3.7 s of CPU to its `hello` on the 2-core machine, where the
test suite starts hundreds of workers and a sweep or a batch starts one per case. With
PT2DIFF_WORKER_SERVER=1 the engine (engine/worker/worker_server.cpp) asks a server instead of starting
Python: the server forks, and the child becomes the worker the engine asked for (`python SCRIPT ARGS...`
run with runpy, in the engine's environment, working directory and memory limit, on the engine's sockets)
in milliseconds. docs/worker-protocol.md, "The worker server".

One server serves one key: the Python, the server's launcher, the working directory and the whole
environment except TMPDIR (each worker gets the engine's scratch TMPDIR). Everything torch and Inductor
read from the environment when they are imported is therefore what a worker started afresh would read;
a request in another environment goes to another server. The engine starts a server when none answers
(`python inductor_worker.py --serve-workers SOCKET`); it ends after `--idle` seconds without requests or
workers, and when a module it imported has changed on disk (it answers `stale` and ends: the next worker
gets a new server).

The socket protocol (a Unix stream socket, one connection per worker):
  engine -> server  one JSON line {"argv": [...], "env": {...}, "cwd": "...", "rlimit_data": [SOFT, HARD]}, sent with
                    three file descriptors (SCM_RIGHTS): the worker's stdin, stdout and stderr
  server -> engine  "pid N" (the worker, in a process group of its own) | "stale" | "error TEXT"
  server -> engine  "exit STATUS" when the worker has ended (STATUS: the raw wait status), then EOF
  engine closes     the worker's process group is killed: a served worker never outlives its engine (a batch
                    that kills a hung case's session, an engine killed by a signal)
"""
import array
import json
import os
import selectors
import signal
import socket
import sys
import time

#: Each request is read whole within this many seconds, or the connection is dropped.
REQUEST_SECONDS = 10

#: In a worker the server forked: (argv, environment) of its request; None in any other process.
SERVED = None

#: What the command that started the server set and unset on top of the engine's environment: (set, unset). The
#: engine starts the server with its Python as the worker would be started, and that Python may be a wrapper script
#: that exports variables before it runs python (a test's planted torch, a site's module set-up); a worker the
#: server forks gets the request's environment with these applied, as a worker started afresh through the wrapper.
LAUNCHER_CHANGES = ({}, [])

#: Variables a shell sets for itself, not the wrapper's doing; TMPDIR is each worker's own.
_SHELL_OWN = frozenset({"TMPDIR", "PWD", "OLDPWD", "SHLVL", "_"})


def launcher_changes(environ):
    """(set, unset): how `environ`, the server's environment at its start, differs from the engine's environment at
    the launch (PT2DIFF_WORKER_SERVER_LAUNCH_ENV, a JSON object the engine passes, removed from `environ`). Nothing
    when the engine did not pass it."""
    given = environ.pop("PT2DIFF_WORKER_SERVER_LAUNCH_ENV", None)
    if given is None:
        return {}, []
    engine = json.loads(given)
    changed = {k: v for k, v in environ.items() if k not in _SHELL_OWN and engine.get(k) != v}
    removed = sorted(k for k in engine if k not in _SHELL_OWN and k not in environ)
    return changed, removed


#: What a worker imports by the end of its first compile and run, beyond its own modules: 2,681 modules in a worker
#: that compiled mlp against 1,122 before its `hello`; with these the child of a server imports 90 more. A name
#: this torch lacks (2.11-2.14 differ) is skipped.
WORKER_MODULES = (
    "torch.export", "torch.export._trace", "torch.export._unlift", "torch._export.serde.serialize",
    "torch._dynamo", "torch._dynamo.backends.inductor", "torch._functorch.aot_autograd",
    "torch._inductor.compile_fx", "torch._inductor.graph", "torch._inductor.scheduler", "torch._inductor.lowering",
    "torch._inductor.decomposition", "torch._inductor.freezing", "torch._inductor.select_algorithm",
    "torch._inductor.kernel.mm", "torch._inductor.fx_passes.post_grad", "torch._inductor.fx_passes.joint_graph",
    "torch._inductor.codecache", "torch._inductor.cpp_builder", "torch._inductor.codegen.cpp",
    "torch._inductor.codegen.cpp_wrapper_cpu", "torch._inductor.codegen.cpp_wrapper_cpu_array_ref",
    "torch._inductor.codegen.memory_planning", "torch._inductor.codegen.wrapper_fxir", "torch._inductor.hooks",
    "torch._inductor.compiler_bisector", "torch.fx.experimental.validator", "torch.utils.cpp_extension",
)


def preload():
    """Imports what a worker imports by the end of its first compile (torch, Inductor, the worker's modules,
    WORKER_MODULES). Nothing is compiled or run, no thread is started and no CUDA is initialized: a forked
    child could use neither."""
    import importlib
    from .native import bind_libstdcxx_first
    bind_libstdcxx_first()
    import faulthandler  # noqa: F401
    from . import protocol  # noqa: F401
    from . import inductor  # noqa: F401  (torch, torch._inductor, torch.export)
    for name in WORKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def snapshot(paths):
    """{path: (mtime_ns, size)} of `paths` (None for one that is missing): what `changed` compares against."""
    files = {}
    for path in paths:
        try:
            st = os.stat(path)
            files[path] = (st.st_mtime_ns, st.st_size)
        except OSError:
            files[path] = None
    return files


def changed(files):
    """Whether any file of the snapshot `files` differs on disk from what it recorded."""
    return snapshot(files) != files


def watched_files():
    """The imported files a change of which makes a server stale: pt2diff's worker package, and torch's version
    file and entry point (a reinstall rewrites both)."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and os.path.abspath(path).startswith(here + os.sep):
            paths.append(path)
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
        paths += [os.path.join(torch_dir, "version.py"), os.path.join(torch_dir, "__init__.py")]
    return paths


def read_request(conn):
    """(request dict, [fd, fd, fd]) from a new connection; raises ValueError on anything else."""
    conn.settimeout(REQUEST_SECONDS)
    data, fds = b"", []
    size = socket.CMSG_SPACE(3 * array.array("i").itemsize)
    while not data.endswith(b"\n"):
        chunk, ancillary, _, _ = conn.recvmsg(1 << 16, size)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[:len(payload) - (len(payload) % received.itemsize)])
                fds.extend(received)
        if not chunk:
            break
        data += chunk
    try:
        request = json.loads(data)
        if len(fds) != 3 or not isinstance(request.get("argv"), list) or len(request["argv"]) < 2:
            raise ValueError
    except ValueError:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request is one JSON line with argv (PYTHON SCRIPT ...) and three descriptors")
    return request, fds


def become_worker(request, fds, closing):
    """In the forked child: takes the request's descriptors, directory, environment and limit, runs
    `argv[1:]` as `python SCRIPT ARGS...` would, and ends the process with its exit status."""
    code = 1
    try:
        os.setpgid(0, 0)
        for fd in closing:
            try:
                os.close(fd)
            except OSError:
                pass
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        changed, removed = LAUNCHER_CHANGES
        os.environ.update(changed)
        for name in removed:
            os.environ.pop(name, None)
        import tempfile
        tempfile.tempdir = None  # gettempdir() reads the worker's TMPDIR again
        limit = request.get("rlimit_data") or 0  # N (soft and hard), or [soft, hard] with -1 for unlimited
        soft, hard = (limit, limit) if isinstance(limit, int) else limit
        if isinstance(limit, list) or limit > 0:  # as the engine sets it for a worker it starts
            import resource
            unlimited = resource.RLIM_INFINITY
            try:
                resource.setrlimit(resource.RLIMIT_DATA, (unlimited if soft < 0 else soft, unlimited if hard < 0 else hard))
            except (ValueError, OSError):
                pass
        import runpy
        global SERVED
        SERVED = (list(request["argv"]), dict(os.environ))
        script = request["argv"][1]
        sys.argv = list(request["argv"][1:])
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        import atexit
        atexit._run_exitfuncs()  # as the interpreter's own exit would
    except BaseException:
        import traceback
        try:
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code & 0xFF if code >= 0 else 1)


def start_afresh_if_environment_changed():
    """In a worker the server forked, when the script changed os.environ before the worker's main() (a wrapper that
    sets TORCHINDUCTOR_FX_GRAPH_CACHE=0, then imports torch): torch and Inductor read the environment when they are
    imported, and the server imported them under the request's. The process is then replaced (exec: the same pid,
    descriptors and process group) by a fresh Python running the request's command in the request's environment,
    which is what the engine would have started; a line on stderr says so. Nothing happens in any other case."""
    if SERVED is None:
        return
    argv, env = SERVED
    if dict(os.environ) == env:
        return
    names = sorted(k for k in set(os.environ) | set(env) if os.environ.get(k) != env.get(k))
    print(f"pt2diff worker server: {argv[1]} changed {', '.join(names)} before the worker started: running it afresh",
          file=sys.stderr, flush=True)
    sys.stdout.flush()
    os.execve(argv[0], argv, env)


def send_line(conn, text):
    try:
        conn.settimeout(REQUEST_SECONDS)
        conn.sendall((text + "\n").encode())
    except OSError:
        pass


def listen(path):
    """A listening Unix socket at `path`, bound under a temporary name and renamed: whole or not at all, an engine never
    connects to a half-made server. Returns (the socket, the inode of `path`: whether the path is still ours)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = f"{path}.{os.getpid()}"
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass
    listener.bind(temporary)
    listener.listen(16)
    os.rename(temporary, path)
    return listener, os.stat(path).st_ino


def unlink_if_ours(path, identity):
    """Removes the socket `path` when it is still this server's (another server may have taken the path since)."""
    try:
        if os.stat(path).st_ino == identity:
            os.unlink(path)
    except OSError:
        pass


class _Server:
    """The state of one server's loop: its socket, the workers it forked and the engines' connections."""

    def __init__(self, path, files):
        self.path, self.files = path, files
        self.listener, self.identity = listen(path)
        self.listener.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.workers = {}  # pid -> the connection its exit is reported on
        self.last = time.monotonic()
        self.stale = False

    def engine_closed(self, key):
        """An engine's connection is readable: it closed it (it ended, or was killed). A served worker never outlives
        its engine: its process group is killed."""
        worker = key.data
        try:
            if not key.fileobj.recv(256):
                self.selector.unregister(key.fileobj)
                if worker in self.workers:
                    try:
                        os.killpg(worker, signal.SIGKILL)
                    except OSError:
                        pass
        except OSError:
            self.selector.unregister(key.fileobj)

    def accept(self):
        """One engine's request: answered "stale" once a watched file changed, else a worker forked for it."""
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(True)
        self.last = time.monotonic()
        try:
            request, fds = read_request(conn)
        except (OSError, ValueError) as e:
            send_line(conn, f"error {e}")
            conn.close()
            return
        if self.stale or changed(self.files):
            if not self.stale:  # the next engine starts a new server at this path
                unlink_if_ours(self.path, self.identity)
            self.stale = True
            for fd in fds:
                os.close(fd)
            send_line(conn, "stale")
            conn.close()
            return
        closing = [self.listener.fileno(), conn.fileno()] + [c.fileno() for c in self.workers.values()]
        pid = os.fork()
        if pid == 0:
            become_worker(request, fds, closing)
        for fd in fds:
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # also here: no race with a kill right after the reply
        except OSError:
            pass
        self.workers[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, data=pid)
        send_line(conn, f"pid {pid}")

    def reap(self):
        """Each worker that ended: its wait status sent to its engine."""
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = self.workers.pop(pid, None)
            if conn is not None:
                try:
                    self.selector.unregister(conn)
                except (KeyError, ValueError):
                    pass
                send_line(conn, f"exit {status}")
                conn.close()
            self.last = time.monotonic()

    def run(self, idle_seconds):
        try:
            while True:
                for key, _ in self.selector.select(timeout=0.2):
                    if key.data is not None:
                        self.engine_closed(key)
                    else:
                        self.accept()
                self.reap()
                if not self.workers and (self.stale or time.monotonic() - self.last > idle_seconds):
                    break
        finally:
            unlink_if_ours(self.path, self.identity)
            self.listener.close()


def serve_forever(path, idle_seconds, ready_fd=None, imports=preload, watched=None):
    """Listens on the Unix socket `path` and forks a worker per request, until `idle_seconds` pass with
    no request and no live worker, or a watched file changes (then it answers `stale` and ends once its
    workers have). `ready_fd`: written "ready" and closed once the server listens (the engine that started
    it waits for that). `imports`: what runs first (preload); `watched`: the files to watch (default
    watched_files() after the imports)."""
    global LAUNCHER_CHANGES
    LAUNCHER_CHANGES = launcher_changes(os.environ)
    imports()
    server = _Server(path, snapshot(watched_files() if watched is None else watched))
    if ready_fd is not None:
        os.write(ready_fd, b"ready\n")
        os.close(ready_fd)
    server.run(idle_seconds)


def main(path, idle_seconds, ready_fd=None):
    """Runs the server (`python inductor_worker.py --serve-workers SOCKET [--idle S]`)."""
    serve_forever(path, idle_seconds, ready_fd)
