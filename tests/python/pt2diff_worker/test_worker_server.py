"""The worker server (pt2diff_worker.server) on its socket, without torch: a server whose imports are skipped
forks a small script as the engine's worker would be forked, in the request's environment, directory,
descriptors and memory limit; a script that changes the environment before the worker starts is run afresh;
it reports the exit status, kills the worker when its engine goes away, answers `stale` when a watched file changes, refuses
a malformed request, and ends when idle. The engine's side: tests/engine/worker/worker_server_test.cpp.

    python -m pytest tests/python/pt2diff_worker/test_worker_server.py
"""
import array
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

PYTHON_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

SCRIPT = textwrap.dedent("""
    import os, resource, sys, tempfile
    line = sys.stdin.readline().strip()
    print(f"got={line}")
    print(f"argv={sys.argv}")
    print(f"cwd={os.getcwd()}")
    print(f"tmp={tempfile.gettempdir()}")
    print(f"var={os.environ.get('PT2DIFF_SERVER_TEST')}")
    print(f"limit={resource.getrlimit(resource.RLIMIT_DATA)[0]}")
    print(f"group={os.getpgid(0) == os.getpid()}")
    print(f"path0={sys.path[0]}")
    sys.stdout.flush()
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[1]))
""")


def start_server(directory, idle, watched):
    """A server at DIRECTORY/s.sock that imports nothing and watches `watched`; returns (process, socket path)."""
    path = os.path.join(directory, "s.sock")
    read, write = os.pipe()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pt2diff_worker import server; "
            "server.serve_forever(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), imports=lambda: None, "
            "watched=[sys.argv[5]])")
    proc = subprocess.Popen([sys.executable, "-c", code, PYTHON_DIR, path, str(idle), str(write), watched],
                            pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as ready:
        assert ready.readline() == "ready\n"
    return proc, path


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


OPENED = []  # sockets and files the tests opened, closed after each test


def request(path, argv, env, cwd, limit=0):
    """Asks the server for a worker; returns (control socket, reply line, worker stdin, stdout, stderr file)."""
    stdin_ours, stdin_theirs = socket.socketpair()
    stdout_ours, stdout_theirs = socket.socketpair()
    err = tempfile.NamedTemporaryFile("w+", delete=False)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.connect(path)
    OPENED.extend((stdin_ours, stdout_ours, err, control))
    line = json.dumps({"argv": argv, "env": env, "cwd": cwd, "rlimit_data": limit}).encode() + b"\n"
    control.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                              array.array("i", [stdin_theirs.fileno(), stdout_theirs.fileno(), err.fileno()]))])
    stdin_theirs.close()
    stdout_theirs.close()
    reply = control.makefile().readline().strip()
    return control, reply, stdin_ours, stdout_ours, err


class WorkerServerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pt2diff-server-test-")
        self.script = os.path.join(self.dir, "script.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)
        self.watched = os.path.join(self.dir, "watched.py")
        with open(self.watched, "w") as f:
            f.write("x = 1\n")
        self.proc, self.path = start_server(self.dir, 30, self.watched)

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        while OPENED:
            OPENED.pop().close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_worker_runs_in_the_requests_environment_and_reports_its_exit(self):
        work = os.path.join(self.dir, "work")
        scratch = os.path.join(self.dir, "scratch")
        os.mkdir(work)
        os.mkdir(scratch)
        env = {"PATH": os.environ.get("PATH", ""), "TMPDIR": scratch, "PT2DIFF_SERVER_TEST": "yes"}
        control, reply, stdin, stdout, err = request(self.path, [sys.executable, self.script, "3"], env, work,
                                                     limit=8 << 30)
        self.assertRegex(reply, r"^pid \d+$")
        pid = int(reply.split()[1])
        self.assertNotEqual(pid, os.getpid())
        stdin.sendall(b"hello\n")
        out = stdout.makefile().read().splitlines()
        self.assertEqual(out, ["got=hello", f"argv=['{self.script}', '3']", f"cwd={work}", f"tmp={scratch}", "var=yes",
                               f"limit={8 << 30}", "group=True", f"path0={self.dir}"])
        self.assertEqual(control.makefile().readline().strip(), f"exit {3 << 8}")  # the raw wait status
        err.seek(0)
        self.assertEqual(err.read(), "to stderr\n")

    def test_a_script_that_changes_the_environment_first_is_run_afresh(self):
        script = os.path.join(self.dir, "wrapper.py")
        with open(script, "w") as f:
            f.write("import os\nos.environ['TORCHINDUCTOR_FX_GRAPH_CACHE'] = '0'  # read when Inductor is imported\n"
                    "from pt2diff_worker import server\n"
                    "print(os.getpid(), server.SERVED is not None, flush=True)\n"
                    "server.start_afresh_if_environment_changed()\n")
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": PYTHON_DIR}
        control, reply, stdin, stdout, err = request(self.path, [sys.executable, script], env, self.dir)
        pid = int(reply.split()[1])
        # Served first; then the same process (pid), exec'd afresh, is no longer a served one.
        self.assertEqual(stdout.makefile().read().splitlines(), [f"{pid} True", f"{pid} False"])
        self.assertEqual(control.makefile().readline().strip(), "exit 0")
        err.seek(0)
        self.assertIn(f"{script} changed TORCHINDUCTOR_FX_GRAPH_CACHE before the worker started: running it afresh",
                      err.read())

    def test_a_killed_worker_is_reported_killed(self):
        env = {"PATH": os.environ.get("PATH", "")}
        sleeper = os.path.join(self.dir, "sleeper.py")
        with open(sleeper, "w") as f:
            f.write("import time\ntime.sleep(60)\n")
        control, reply, *_ = request(self.path, [sys.executable, sleeper], env, self.dir)
        pid = int(reply.split()[1])
        os.killpg(pid, 9)  # the engine kills the worker's process group
        self.assertEqual(control.makefile().readline().strip(), "exit 9")

    def test_a_worker_ends_with_its_engine(self):
        sleeper = os.path.join(self.dir, "sleeper.py")
        with open(sleeper, "w") as f:
            f.write("import subprocess, sys, time\n"
                    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                    "print(child.pid, flush=True)\ntime.sleep(60)\n")
        control, reply, stdin, stdout, err = request(self.path, [sys.executable, sleeper],
                                                     {"PATH": os.environ.get("PATH", "")}, self.dir)
        pids = [int(reply.split()[1]), int(stdout.makefile().readline())]
        control.close()  # the engine ended: it was killed, say, with the session a batch kills past --case-timeout
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([p for p in pids if alive(p)], [], "the worker and its child are killed")
        self.assertIsNone(self.proc.poll())

    def test_a_changed_file_makes_the_server_stale_and_it_ends(self):
        time.sleep(0.01)
        with open(self.watched, "w") as f:
            f.write("x = 22\n")
        control, reply, *_ = request(self.path, [sys.executable, self.script, "0"], {}, self.dir)
        self.assertEqual(reply, "stale")
        self.assertEqual(self.proc.wait(timeout=10), 0)
        self.assertFalse(os.path.exists(self.path))

    def test_a_malformed_request_is_refused(self):
        control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        OPENED.append(control)
        control.connect(self.path)
        control.sendall(b"not json\n")
        self.assertTrue(control.makefile().readline().startswith("error a request is one JSON line"))
        self.assertIsNone(self.proc.poll())  # and the server goes on


class IdleServerTest(unittest.TestCase):
    def test_an_idle_server_ends_and_removes_its_socket(self):
        directory = tempfile.mkdtemp(prefix="pt2diff-server-test-")
        watched = os.path.join(directory, "w.py")
        open(watched, "w").close()
        proc, path = start_server(directory, 0.5, watched)
        self.assertEqual(proc.wait(timeout=20), 0)
        self.assertFalse(os.path.exists(path))
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
