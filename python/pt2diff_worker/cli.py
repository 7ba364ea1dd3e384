"""The Inductor worker's command line: `python -m pt2diff_worker [--cache-dir DIR] [--compiler aoti]`, or the launcher
engine/backends/inductor_worker.py (share/pt2diff/inductor_worker.py once installed) that pt2diff runs.

Importing this module has no effect; `main()` parses the arguments, sets Inductor's cache directory,
takes stdout for the protocol, and only then imports torch and serves.
"""
import argparse
import json
import os
import sys

from .native import bind_libstdcxx_first  # noqa: F401  (used by main; here since the worker began)

DESCRIPTION = ("pt2diff's Inductor worker: compiles regions of a torch.export archive with Inductor (torch.compile, "
               "or AOTInductor with --compiler aoti) and runs them.")
DEFAULT_CACHE_DIR = os.path.join("~", ".cache", "pt2diff", "inductor")


def parse_args(argv=None, prog=None):
    """The worker's arguments (`--cache-dir`, default ~/.cache/pt2diff/inductor; `--compiler`, default
    inductor) from `argv`
    (default: sys.argv[1:]); `--help` and usage errors exit as argparse does."""
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    p.add_argument("--cache-dir", default=os.path.expanduser(DEFAULT_CACHE_DIR),
                   help="Inductor's cache directory (FX graph cache and kernel code)")
    p.add_argument("--compiler", choices=("inductor", "aoti"), default="inductor",
                   help="inductor: torch.compile (the default); aoti: AOTInductor (each region exported, compiled "
                        "to a package and loaded with aoti_load_package)")
    # The worker server (server.py), started by the engine with PT2DIFF_WORKER_SERVER=1: not a worker itself.
    p.add_argument("--serve-workers", metavar="SOCKET", help=argparse.SUPPRESS)
    p.add_argument("--idle", type=float, default=60.0, help=argparse.SUPPRESS)
    p.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def inductor_cache_dir(cache_dir, capability):
    """The Inductor cache directory for `cache_dir` under ATEN_CPU_CAPABILITY `capability`.

    Inductor's FX graph cache is not keyed by ATEN_CPU_CAPABILITY: code cached while vectorizing for
    AVX-512 is reused under ATEN_CPU_CAPABILITY=default, whose headers lack at::vec, and fails to build.
    One cache per capability: DIR/aten-cpu-CAPABILITY (lowercase) when it is set, DIR itself when not."""
    capability = (capability or "").strip().lower()
    return os.path.join(cache_dir, "aten-cpu-" + capability) if capability else cache_dir


def inductor_set_its_default(environ):
    """Whether `environ`'s TORCHINDUCTOR_CACHE_DIR is the default that Inductor wrote there itself.

    Importing torch._inductor.config asks Inductor for its cache directory, and when none is set Inductor
    writes its default (TMPDIR/torchinductor_USER) into os.environ. A worker that imports Inductor before
    main() (a wrapper that plants a compiler bug, tests/zoo/planted_worker.py) would then keep that
    default: under the scratch TMPDIR the engine gives each worker and removes after it, so every kernel
    and the precompiled header were built again by every such worker (44 g++ runs, 29 s of CPU, in one
    planted run of resnet18 on the 2-core machine). Such a value is not the user's setting. False
    when Inductor is not imported (nothing is imported here)."""
    utils = sys.modules.get("torch._inductor.runtime.cache_dir_utils")
    value = environ.get("TORCHINDUCTOR_CACHE_DIR")
    if utils is None or value is None or not hasattr(utils, "default_cache_dir"):
        return False
    return os.path.abspath(value) == os.path.abspath(utils.default_cache_dir())


def setup_environment(cache_dir, environ=None):
    """Sets TORCHINDUCTOR_CACHE_DIR in `environ` (default os.environ), unless the user set it, to
    `inductor_cache_dir(cache_dir, $ATEN_CPU_CAPABILITY)`; a value Inductor wrote itself on import
    (`inductor_set_its_default`) is replaced. Run it before Inductor compiles anything: Inductor reads
    its cache location from the environment. Returns the value in force."""
    environ = os.environ if environ is None else environ
    if inductor_set_its_default(environ):
        del environ["TORCHINDUCTOR_CACHE_DIR"]
    return environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                              inductor_cache_dir(cache_dir, environ.get("ATEN_CPU_CAPABILITY", "")))


def keep_precompiled_headers_in_cache(cache_dir=None):
    """Moves Inductor's precompiled headers from its default place to `cache_dir`/precompiled_headers
    (default: $TORCHINDUCTOR_CACHE_DIR); returns that directory, or None when this torch has no such
    setting (then nothing changes). Call it after torch is imported.

    Inductor keeps them under tempfile.gettempdir(), and the engine gives each worker a scratch TMPDIR
    that it removes at the end: without this, every worker that compiles a C++ kernel builds the
    ~150 MB header again first (4.9 s of g++ per run, measured on the 2-core machine). A header's name
    is a hash of its compile command, the preprocessed text and the compiler: it is never reused where
    any of them differs."""
    from torch._inductor import codecache
    cache_dir = cache_dir or os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not cache_dir or not hasattr(codecache, "_HEADER_DIR") or not hasattr(codecache, "_HEADER_LOCK_DIR"):
        return None
    codecache._HEADER_DIR = os.path.join(cache_dir, "precompiled_headers")
    codecache._HEADER_LOCK_DIR = os.path.join(codecache._HEADER_DIR, "locks")
    return codecache._HEADER_DIR


def remember_vec_isa_probes(cache_dir=None):
    """Makes Inductor's check of a vector ISA (AVX-512, AVX2, ...) run once per cache instead of once per process;
    returns the file that remembers them (`cache_dir`, default $TORCHINDUCTOR_CACHE_DIR, /vec_isa_probes.json), or
    None when this torch checks differently (then nothing changes). Call it after torch is imported.

    Before vectorizing a kernel Inductor builds a probe library with the ISA's flags (kept in its cache, named by a
    hash of the compiler's version, the flags and torch's version) and loads it in a new Python process to see that
    it loads beside this torch: 0.1-0.3 s of CPU at every worker start on the 2-core machine, where the test
    suite starts hundreds. A check that passed is remembered under the probe library's path, size and mtime and
    the identity of this torch's libtorch_cpu and Python: the same file loaded by the same torch gives the same
    answer. A failed check is not remembered (it is made again, as Inductor does). The probe library is built in
    `cache_dir` even while a compile with caches off has pointed Inductor at a fresh directory."""
    import torch
    from torch._inductor import cpu_vec_isa
    probe = getattr(cpu_vec_isa.VecISA, "_probe_load", None)
    cache_dir = cache_dir or os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if probe is None or not cache_dir:
        return None
    memo = os.path.join(cache_dir, "vec_isa_probes.json")
    libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")

    def identity(path):
        st = os.stat(path)
        return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"

    def remembered_probe(self, output_path):
        try:
            key = f"{identity(output_path)}|{identity(libtorch)}|{sys.executable}"
        except OSError:
            return probe(self, output_path)
        try:
            with open(memo) as f:
                known = json.load(f)
        except (OSError, ValueError):
            known = {}
        if known.get(key) is True:
            return True
        ok = probe(self, output_path)
        if ok:
            known[key] = True
            tmp = f"{memo}.{os.getpid()}.tmp"
            try:
                os.makedirs(cache_dir, exist_ok=True)
                with open(tmp, "w") as f:
                    json.dump(known, f)
                os.replace(tmp, memo)  # whole or not at all: parallel workers never read half a file
            except OSError:
                pass
        return ok

    cpu_vec_isa.VecISA._probe_load = remembered_probe
    check_build = getattr(cpu_vec_isa.VecISA, "check_build", None)
    if check_build is not None:
        def check_build_in_cache(self, code):
            # A compile with caches off (force_disable_caches: every observed AOTI compile, a planted compiler's)
            # runs in a fresh cache directory, where the probe libraries are not: each check would build its
            # library again and load it in a new process (six ISAs: 5-8 s per compile on the 2-core machine).
            # The probe is the same wherever it is built: build and remember it in this worker's cache.
            fresh = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
            if fresh == cache_dir:
                return check_build(self, code)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
            try:
                return check_build(self, code)
            finally:
                if fresh is None:
                    os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
                else:
                    os.environ["TORCHINDUCTOR_CACHE_DIR"] = fresh

        cpu_vec_isa.VecISA.check_build = check_build_in_cache
    return memo


def main(argv=None, prog=None):
    """Runs the Inductor worker: arguments, cache directory, libstdc++ bound first, stdout for the
    protocol, then serves requests on stdin until `shutdown` or end of input."""
    from .server import start_afresh_if_environment_changed
    start_afresh_if_environment_changed()  # a served worker whose script changed the environment first
    args = parse_args(argv, prog)
    if args.serve_workers:  # a server forking workers, not a worker (server.py)
        from .server import main as serve
        serve(args.serve_workers, args.idle, args.ready_fd)
        return
    setup_environment(args.cache_dir)
    bind_libstdcxx_first()
    # A crash in native code (a segfault in a kernel, in a package's runtime) prints the Python frames it
    # happened under to stderr, the engine's log of the worker: its death message names the innermost one.
    import faulthandler
    faulthandler.enable()
    from .protocol import protocol_channel, serve
    # The engine reads stdout as the protocol channel: keep everything else off it, torch's import included.
    replies = protocol_channel()
    from .inductor import Worker
    keep_precompiled_headers_in_cache()
    remember_vec_isa_probes()
    serve(Worker(args.compiler), replies=replies)
