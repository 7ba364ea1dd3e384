"""The Inductor worker: compiles regions of an archive with torch.compile(backend="inductor"), or with
AOTInductor (Worker("aoti"): torch.export, aoti_compile_and_package, aoti_load_package), and runs them,
answering the protocol's requests (pt2diff_worker.protocol.serve(Worker()) serves it).

Import it after TORCHINDUCTOR_CACHE_DIR is set (pt2diff_worker.cli.main does): Inductor reads it.
"""
import ast
import contextlib
import os
import shutil
import sys
import tempfile
import traceback

import torch

from . import artifacts, decisions, distinct_ops, kernel_map, regions, shapes, training, unit_test
from .archive import Archive
from .protocol import PROTOCOL, Failure, describe, failure_kind


def config_value(text):
    """An Inductor config value as the engine sends it (`--inductor-config key=VALUE`): a Python literal
    ("True", "3", "'x'", "[1, 2]") is read as one; any other text stays a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


@contextlib.contextmanager
def torch_settings(settings):
    """The torch globals a region was compiled under ("matmul_precision", "tf32"), set for its
    compile and every run (cuBLAS and cuDNN read them at call time), then put back.

    Only the two legacy setters are used, as the engine does in its own process
    (engine/execution/math_settings.cpp): they keep torch's legacy and per-backend fp32 settings in
    step. "tf32" False is matmul precision "highest" (over "matmul_precision") and cuDNN TF32 off;
    setting cuBLAS TF32 off after precision "high" leaves a mixed state that torch 2.13 refuses to read."""
    precision = torch.get_float32_matmul_precision()
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    try:
        if settings.get("tf32") is False:
            torch.set_float32_matmul_precision("highest")
            torch.backends.cudnn.allow_tf32 = False
        elif "matmul_precision" in settings:
            torch.set_float32_matmul_precision(settings["matmul_precision"])
        yield
    finally:
        torch.set_float32_matmul_precision(precision)
        torch.backends.cudnn.allow_tf32 = cudnn_tf32


@contextlib.contextmanager
def _cwd(path):
    """The current directory is `path` inside the block."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def kernel_map_blocker(req, config, aoti, eager):
    """Why the kernel map (kernel_map.py: hooks after every kernel, on the compile's own code) cannot observe this
    compile, or "" when it can."""
    why_not = kernel_map.unavailable(config, aoti) if req.get("observe") else "not asked"
    if eager and not why_not:
        why_not = "nodes are left eager: the graph is compiled in pieces"
    return why_not


class Worker:
    """pt2diff's Inductor worker: one method per protocol request, each taking the request dict and
    returning the reply's fields (or raising protocol.Failure)."""

    #: The compilers a worker can be: "inductor" (torch.compile, a Python wrapper) and "aoti"
    #: (AOTInductor: the region exported, compiled to a package and loaded as a deployed model is).
    COMPILERS = ("inductor", "aoti")

    def __init__(self, compiler="inductor"):
        if compiler not in self.COMPILERS:
            raise ValueError(f"unknown compiler {compiler!r} (known: {', '.join(self.COMPILERS)})")
        self.compiler = compiler
        self.archive = None      # the loaded archive (program, nodes by name, weights, device)
        self.regions = {}        # region id -> (compiled callable, input names, settings, AOTI (payloads, code) or None)
        self._workdir = None     # AOTI packages and the buffers they save, removed at exit

    # The loaded archive's parts, under the names scripts use (tests/device/*.py).
    @property
    def program(self):
        return self.archive.program if self.archive else None

    @property
    def by_name(self):
        return self.archive.by_name if self.archive else {}

    @property
    def state(self):
        return self.archive.state if self.archive else {}

    @property
    def device(self):
        return self.archive.device if self.archive else "cpu"

    # --- requests ----------------------------------------------------------------------------
    def hello(self, req):
        """`worker`, `protocol`, `torch` and the Inductor cache in use."""
        cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if cache_dir is None:  # not started by main(): Inductor's own default
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir
            cache_dir = default_cache_dir()
        return {"worker": self.compiler, "protocol": PROTOCOL, "torch": torch.__version__, "cache_dir": cache_dir,
                "observe": True}

    def load(self, req):
        """Loads the archive (Archive.from_request); forgets every compiled region. Reply: `nodes`, and
        `inlined` ({region: the engine's names of the ops made of its body, in order}) when the request named
        regions to inline."""
        if req.get("process_group"):  # pt2diff dist: this worker is one rank of a process group
            from . import process_group
            process_group.join(req["process_group"], req.get("device"))
        self.archive = Archive.from_request(req)
        self.regions = {}
        self.workdir(clear=True)
        reply = {"nodes": self.archive.node_count()}
        if req.get("inline_autocast"):
            reply["inlined"] = self.archive.inlined
        return reply

    def compile(self, req):
        """Compiles a region with Inductor, including its first call on `example_inputs`."""
        if self.archive is None:
            raise Failure("bad_request", "compile before load")
        eager = list(req.get("eager", []))
        gm, input_names = self.region_module(req["nodes"], req["inputs"], req["outputs"], bool(req.get("exploded")), eager)
        written = regions.written_inputs(gm)
        example = self.region_inputs(req["example_inputs"], input_names, written)
        config = {k: config_value(v) for k, v in req.get("config", {}).items()}
        asked = req.get("decisions")  # Inductor's decisions recorded, some turned off (decisions.py)
        if asked is not None:
            config["force_disable_caches"] = True  # a cache hit would skip the passes, lowerings and fusions counted
        from torch._inductor import config as inductor_config
        try:
            patch = inductor_config.patch(config)
        except Exception as e:  # noqa: BLE001
            raise Failure("bad_request", f"Inductor config {config}: {e}")
        whole_step = asked is not None and self.compiler != "aoti" and training.is_whole_step(
            self.program, req["outputs"], bool(req.get("exploded")), eager)
        decided = (decisions.limited(asked, kernel_map.BackwardNames(self.program) if whole_step else None)
                   if asked is not None else contextlib.nullcontext())
        try:
            with decided as seen:
                # The same entry point as a user's torch.compile (Dynamo, AOTAutograd, Inductor), so the
                # numbers are those the user sees. It compiles on the first call: that call is the compile.
                # Inference (no_grad): the forward a deployed model runs. Under autograd Inductor compiles a
                # training graph whose partitioner may keep low-precision activations for backward, and
                # that changes the forward's rounding.
                settings = req.get("settings", {})
                aoti = self.compiler == "aoti"
                if aoti and eager:
                    raise Failure("compile_failed", "AOTInductor compiles a region whole: it cannot leave nodes eager "
                                                    "(torch.compiler.disable has no AOTInductor counterpart)")
                step = not aoti and training.is_whole_step(self.program, req["outputs"], bool(req.get("exploded")), eager)
                why_not = kernel_map_blocker(req, config, aoti, eager)
                # A training step's backward kernels are named by the archive's backward nodes (kernel_map.BackwardNames).
                backward = kernel_map.BackwardNames(self.program) if step and not why_not else None
                observe = kernel_map.patch(req["nodes"], backward) if not why_not else contextlib.nullcontext()
                payloads = None
                # Dynamic shapes: the dims the archive exported dynamic are compiled symbolic, as torch.compile compiles
                # them once marked (shapes.py), unless the request says "dynamic": false (--static).
                dims = [] if step else shapes.dynamic_dims(self.by_name, input_names, self.program.range_constraints)
                dynamic = bool(dims) and bool(req.get("dynamic", True))
                recorder = shapes.Recorder()
                specialized = ""
                if dynamic and not aoti:
                    shapes.mark(example, dims)
                if aoti:
                    with patch, observe, torch.no_grad(), torch_settings(settings):
                        compiled, payloads = self.compile_aoti(req["region"], gm, example, observed=not why_not,
                                                               dims=dims if dynamic else [])
                elif step:
                    # A whole training step: its forward through torch.compile, the gradients by autograd through it
                    # (AOTAutograd's partition and Inductor's backward: training.py). The first call compiles both.
                    compiled = training.compile_step(self.archive, req["nodes"], input_names, req["outputs"])
                    with patch, observe, torch_settings(settings):
                        compiled(*example)
                elif not dynamic and asked is None and (p := self.distinct_plan(req, gm, example, eager, observed=not why_not)) is not None:
                    # A model's repeated layers: each distinct op compiled once, run once per occurrence.
                    def compile_fn(module):
                        return torch.compile(module, backend="inductor", fullgraph=True, dynamic=False)

                    compiled = distinct_ops.DistinctOps(gm, p, compile_fn, lambda: inductor_config.patch(config),
                                                        torch.device(self.device).type)
                    with observe, torch.no_grad(), torch_settings(settings):
                        compiled.first_call(example)
                else:
                    compiled, recorder, specialized = self.torch_compile(
                        gm, example, eager, dims if dynamic else [], lambda: (patch, observe, torch_settings(settings)),
                        lambda: self.region_inputs(req["example_inputs"], input_names, written))
        except Failure:
            raise
        except Exception as e:  # noqa: BLE001 - the compiler's message is the point
            raise Failure(failure_kind(e, "compile_failed"), describe(e), traceback.format_exc())
        self.regions[req["region"]] = (compiled, input_names, settings, payloads, written, list(req["outputs"]), recorder)
        reply = {"eager": len(eager)} if eager else {}  # how many nodes were left eager: the engine checks
        if not step:
            reply["shapes"] = recorder.describe(dims, dynamic, aoti, specialized)
        if req.get("observe"):
            reply["kernel_map"] = why_not or "available"
        if asked is not None:
            reply["decisions"] = seen
        return reply

    @staticmethod
    def torch_compile(gm, example, eager, dims, contexts, fresh_inputs):
        """`gm` through torch.compile, compiled by its first call on `example`: (compiled, recorder, what the compile
        could not keep dynamic or ""). Nodes left eager break the graph (torch.compiler.disable): the pieces between them
        compile. `dims`: the dims compiled symbolic (none: a static compile). `contexts()`: the config patch, the kernel
        map and the user's settings, entered around each call; `fresh_inputs()`: the example inputs again."""
        recorder = shapes.Recorder()
        compiled = torch.compile(gm, backend=recorder.backend, fullgraph=not eager, dynamic=None if dims else False)
        try:
            with contextlib.ExitStack() as stack:
                for c in (*contexts(), torch.no_grad(), shapes.dynamic_ints(dims)):
                    stack.enter_context(c)
                compiled(*example)
            return compiled, recorder, ""
        except Exception as e:  # noqa: BLE001
            if not (dims and shapes.is_specialization(e)):
                raise
            # The compile cannot keep a dim dynamic over the exported range (it narrows it, or forces one size):
            # compiled as torch.compile would with maybe_mark_dynamic, what it could not keep said in the reply.
            specialized = shapes.violation(e)
        example = fresh_inputs()
        shapes.mark(example, dims, strict=False)
        recorder = shapes.Recorder()
        compiled = torch.compile(gm, backend=recorder.backend, fullgraph=not eager, dynamic=None)
        with contextlib.ExitStack() as stack:
            for c in (*contexts(), torch.no_grad()):
                stack.enter_context(c)
            compiled(*example)
        return compiled, recorder, specialized

    def run(self, req):
        """Runs a compiled region on `inputs`, writing its outputs (on the CPU) to `outputs_file`."""
        region = self.regions.get(req["region"])
        if region is None:
            raise Failure("bad_request", f"no compiled region '{req['region']}'")
        compiled, input_names, settings, payloads, written, output_names, recorder = region
        compiles = recorder.compiles
        inputs = self.region_inputs(req["inputs"], input_names, written)
        observing = "observed_file" in req
        saved_dir = None
        try:
            if "seed" in req:
                torch.manual_seed(int(req["seed"]))  # as the engine seeds its own runs: same random stream
            observed = []  # (payload, copy): the buffer copied at once (Inductor reuses buffers in place)
            wrappers = set()  # the generated wrapper modules that ran the hooks: the kernels' code
            if payloads is not None and observing:
                # AOTI's save function writes under the current directory: a fresh one per run.
                saved_dir = tempfile.mkdtemp(prefix="observed-", dir=self.workdir())
                watch = _cwd(saved_dir)
            elif observing:
                watch = kernel_map.observing(lambda info, t: observed.append((info, t.detach().to("cpu", copy=True))), wrappers)
            else:
                watch = contextlib.nullcontext()
            with torch.no_grad(), torch_settings(settings), watch:
                outputs = compiled(*inputs)
            if saved_dir is not None:
                observed = kernel_map.aoti_saved(saved_dir, payloads[0])
        except Exception as e:  # noqa: BLE001
            raise Failure(failure_kind(e, "run_failed"), describe(e), traceback.format_exc())
        finally:
            if saved_dir is not None:
                shutil.rmtree(saved_dir, ignore_errors=True)
        outputs = [o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs]
        outputs, casts = self.as_declared(outputs, output_names)
        torch.save(outputs, req["outputs_file"])
        reply = {"casts": casts} if casts else {}
        if recorder.compiles > compiles:  # a guard failed at these sizes: Dynamo compiled again (shapes.py)
            reply["recompiled"] = {"compiles": recorder.compiles - compiles, "guards": recorder.guards}
        if not observing:
            return reply
        torch.save([t for _, t in observed], req["observed_file"])
        names = {info.get("kernel") for info, _ in observed}
        if payloads is not None:  # AOTI: the sources kept while its code was generated
            code = {name: text for name, text in payloads[1].items() if name in names}
        else:
            code = kernel_map.kernel_code(sorted(wrappers), names)
        return {**reply, "observed": [info for info, _ in observed], "code": code}

    def as_declared(self, outputs, names):
        """Outputs in the floating dtype the graph declares for them: a compiled op alone can return another (Inductor's
        nll_loss_backward of a bfloat16 step on CUDA returns float32, eager and the graph bfloat16); cast back, each
        cast said in the reply's `casts` ("NAME: float32 -> bfloat16") and on stderr. Other mismatches are left for
        the engine's check of what a worker returns."""
        casts = []
        out = list(outputs)
        for i, (value, name) in enumerate(zip(outputs, names)):
            node = self.by_name.get(name)
            meta = node.meta.get("val") if node is not None else None
            if (isinstance(value, torch.Tensor) and isinstance(meta, torch.Tensor) and value.dtype != meta.dtype
                    and value.is_floating_point() and meta.is_floating_point()):
                out[i] = value.to(meta.dtype)
                casts.append(f"{name}: {str(value.dtype).removeprefix('torch.')} -> {str(meta.dtype).removeprefix('torch.')}")
        if casts:
            print("pt2diff worker: compiled outputs cast to the graph's dtypes: " + "; ".join(casts), file=sys.stderr)
        return out, casts

    def compile_aoti(self, region, gm, example, observed, dims=()):
        """`gm` exported on `example` and compiled by AOTInductor into a package (in the worker's scratch
        directory), loaded as a deployed model is: returns (the loaded runner, (the payloads of its save
        lines, each kernel's source by name) when `observed`, else None). An observed compile bypasses Inductor's caches: the payloads
        are made while the code is generated, which a cache hit skips. `dims` (shapes.dynamic_dims): exported dynamic,
        as the archive was, so that the package's kernels take those sizes at run time."""
        ep = torch.export.export(gm.to(self.device), tuple(example), strict=False,
                                 dynamic_shapes=shapes.export_dims(dims, len(example)) if dims else None)
        package = os.path.join(self.workdir(), f"{region}.pt2")
        from torch._inductor import config as inductor_config
        if observed:
            with kernel_map.recording_aoti() as (payloads, code), inductor_config.patch({"force_disable_caches": True}):
                torch._inductor.aoti_compile_and_package(ep, package_path=package)
            payloads = (list(payloads), dict(code))
        else:
            payloads = None
            torch._inductor.aoti_compile_and_package(ep, package_path=package)
        runner = torch._inductor.aoti_load_package(package)
        # The first call, as torch.compile's: loading and first-run costs belong to the compile. An
        # observed package saves its buffers under the current directory: a scratch one, removed.
        first = tempfile.mkdtemp(prefix="first-run-", dir=self.workdir())
        try:
            with _cwd(first):
                runner(*example)
        finally:
            shutil.rmtree(first, ignore_errors=True)
        return runner, payloads

    def workdir(self, clear=False):
        """The worker's scratch directory (AOTI packages, saved buffers), made on first use; `clear`
        empties it (a new archive's regions replace the old)."""
        if clear and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if clear:
            return None
        if self._workdir is None:
            import atexit
            self._workdir = tempfile.mkdtemp(prefix="pt2diff-aoti-")
            atexit.register(shutil.rmtree, self._workdir, True)
        return self._workdir

    def export(self, req):
        """The fused region as a standalone torch.export archive, its inputs (weights included, as
        inputs) as a torch.save tuple: a repro anyone can load without the original model."""
        if self.archive is None:
            raise Failure("bad_request", "export before load")
        gm, input_names = self.region_module(req["nodes"], req["inputs"], req["outputs"], False)
        # Exported on the load's device (a GPU export's window stays on the GPU, fused kernels and all);
        # the inputs are saved from the CPU, which loads anywhere.
        example = [v.detach() if isinstance(v, torch.Tensor) else v
                   for v in self.region_inputs(req["example_inputs"], input_names)]
        gm = gm.to(self.device)
        try:
            ep = torch.export.export(gm, tuple(example), strict=False)
            torch.export.save(ep, req["archive"])
            torch.save(tuple(v.cpu() if isinstance(v, torch.Tensor) else v for v in example), req["inputs_file"])
        except Exception as e:  # noqa: BLE001
            raise Failure("export_failed", describe(e), traceback.format_exc())
        reply = {"nodes": [n.name for n in ep.graph.nodes if n.op == "call_function"]}
        if req.get("test_file"):
            # The window as a PyTorch unit test beside the archive (unit_test.py): plain PyTorch, no pt2diff.
            t = req.get("test", {})
            lifted = len(ep.graph_signature.input_specs) != len(ep.graph_signature.user_inputs)
            why = ("torch.export lifted constants of the window into inputs: the test would need the archive" if lifted else
                   unit_test.write(ep.graph_module, req["test_file"], inputs_name=os.path.basename(req["inputs_file"]),
                                   graph=t.get("graph", ""), nodes=t.get("nodes", ""), summary=t.get("summary", ""),
                                   rule=t.get("rule", "same"), tol=float(t.get("tol", 1e-3)),
                                   device=str(torch.device(self.device))))
            reply["test"] = why or "written"
        if req.get("artifacts_dir"):
            # The compiler's own artifacts of the window (artifacts.py): Inductor's debug trace of one compile of it.
            config = {k: config_value(v) for k, v in req.get("config", {}).items()}
            files, why = artifacts.write(gm, example, req["artifacts_dir"], config=config,
                                         settings_context=torch_settings(req.get("settings", {})))
            reply["artifacts"] = [{"what": w, "path": p} for w, p in files]
            reply["artifacts_message"] = why
        return reply

    def forget(self, req):
        """Drops a compiled region (unknown ids are fine), and its AOTI package if it has one."""
        self.regions.pop(req["region"], None)
        if self._workdir is not None:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(self._workdir, f"{req['region']}.pt2"))
        return {}

    # --- regions ----------------------------------------------------------------------------
    def distinct_plan(self, req, gm, example, eager, observed):
        """How an exploded region's ops share compiles (distinct_ops.plan), or None: a fused region, AOTI, nodes
        left eager, an observed compile (the kernel map names each occurrence's buffers), the request's
        `distinct_ops` false, or no op that occurs twice."""
        if not req.get("exploded") or self.compiler != "inductor" or eager or observed or not req.get("distinct_ops", True):
            return None
        return distinct_ops.plan(gm, example)

    def region_module(self, node_names, input_names, output_names, exploded, eager=()):
        """The region's GraphModule and input names (Archive.region_module on the loaded archive)."""
        return self.archive.region_module(node_names, input_names, output_names, exploded, eager)

    def region_inputs(self, path, input_names, written=()):
        """The region's input values on the load's device (Archive.region_inputs; `written`: weights it copies)."""
        return self.archive.region_inputs(path, input_names, written)
