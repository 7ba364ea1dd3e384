"""Unit tests of pt2diff_worker on tiny FX graphs: regions, the protocol loop, the command line, and one
real Inductor compile. unittest TestCases, run under pytest:

    python -m pytest tests/python/pt2diff_worker   # or: python tests/python/run_tests.py tests/python/pt2diff_worker
"""
import contextlib
import importlib.util
import io
import json
import operator
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

# Before torch is imported: Inductor reads its cache location from the environment. A cache of our own,
# removed at the end, so that the one real compile is a real compile.
TMP = tempfile.mkdtemp(prefix="pt2diff-worker-tests-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(TMP, "inductor")
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
PYTHON_DIR = os.path.join(REPO, "python")
LAUNCHER = os.path.join(REPO, "engine", "backends", "inductor_worker.py")
sys.path.insert(0, PYTHON_DIR)

import torch  # noqa: E402
import torch.fx  # noqa: E402

from pt2diff_worker import cli, distinct_ops  # noqa: E402
from pt2diff_worker.archive import Archive  # noqa: E402
from pt2diff_worker.inductor import Worker, config_value, torch_settings  # noqa: E402
from pt2diff_worker.protocol import Failure, serve  # noqa: E402
from pt2diff_worker.regions import attention_on_cpu, math_attention, region_module, written_inputs  # noqa: E402

WEIGHTS = ["p_fc1_weight", "p_fc1_bias", "p_fc2_weight", "p_fc2_bias"]
ARCHIVE = os.path.join(TMP, "two_layer.pt2")


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class WithFactory(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(4, device=x.device)


def setUpModule():
    torch.manual_seed(0)
    torch.export.save(torch.export.export(TwoLayer(), (torch.randn(3, 8),)), ARCHIVE)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def placeholders(gm):
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def ops(gm):
    return [n.name for n in gm.graph.nodes if n.op == "call_function"]


def outputs(gm):
    return [a.name for a in gm.graph.output_node().args[0]]


def failure(test, call):
    with test.assertRaises(Failure) as caught:
        call()
    return caught.exception.kind, str(caught.exception)


class InlineAutocastTest(unittest.TestCase):
    """Archive.load(inline=...): a torch.autocast region inlined as the engine inlined it (graphs/inline_region.cpp),
    from the engine's own names (`pt2diff inspect --json`'s "inlined", which a worker's load request carries)."""
    FIXTURE = os.path.join(PYTHON_DIR, "..", "fixtures", "autocast_regions.pt2")

    def engine_inlining(self):
        """The engine's inlining of the fixture's top-level region, and its body op nodes' names once inlined in
        graph order: from the CLI (PT2DIFF_CLI, which ctest sets)."""
        cli_path = os.environ.get("PT2DIFF_CLI")
        if not cli_path:
            self.skipTest("PT2DIFF_CLI (the pt2diff binary) is not set: ctest sets it")
        run = subprocess.run([cli_path, "inspect", "--json", self.FIXTURE], capture_output=True, text=True, check=True)
        report = json.loads(run.stdout)
        (region, spec), = report["inlined"].items()
        body = next(a for a in report["autocast"] if a["node"] == region)["body_nodes"]
        return region, spec, [spec["nodes"][n] for n in body if n in spec["nodes"]]

    def test_an_inlined_region_is_the_engines_graph_and_computes_what_the_region_does(self):
        region, spec, order = self.engine_inlining()
        ep = torch.export.load(self.FIXTURE)
        outputs = [u.name for u in next(n for n in ep.graph.nodes if n.name == region).users]
        archive = Archive.load(self.FIXTURE, inline={region: spec})
        graph = archive.program.graph_module.graph
        self.assertEqual(archive.inlined, {region: order})  # the ops the engine has, in its order: what the engine checks
        self.assertNotIn(region, [n.name for n in graph.nodes])
        for name in list(spec["nodes"].values()) + list(spec["values"].values()):
            self.assertIn(name, archive.by_name)  # every name the engine's regions may use
        for name in outputs:  # the region's outputs are now the body's last ops, under their names
            self.assertIs(archive.by_name[name].graph, graph)
        inputs = iter(torch.load(self.FIXTURE.replace(".pt2", "_inputs.pt"), weights_only=True))
        args = [archive.state[n.name] if n.name in archive.state else next(inputs) for n in graph.nodes if n.op == "placeholder"]
        with torch.no_grad():
            got = archive.program.graph_module(*args)
            want = torch.export.load(self.FIXTURE).graph_module(*args)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertTrue(torch.equal(g, w))

    def test_a_body_node_the_engine_did_not_name_is_a_load_failure(self):
        region, spec, order = self.engine_inlining()
        missing = {"nodes": dict(spec["nodes"]), "values": dict(spec["values"])}
        body = order[0]  # an op of the body, by its engine name
        for table in missing.values():
            for k in [k for k, v in table.items() if v == body]:
                del table[k]
        kind, message = failure(self, lambda: Archive.load(self.FIXTURE, inline={region: missing}))
        self.assertEqual(kind, "load_failed")
        self.assertIn("the two inliners disagree", message)

    def test_bodies_follow_the_compile_device(self):
        # A CPU export compiled for a GPU: devices baked into the region's body, and the region's autocast
        # device type, follow the compile (as the engine's runs map them); for the CPU nothing changes.
        from pt2diff_worker.regions import graphs_on_device
        gm = torch.export.load(self.FIXTURE).graph_module

        def seen(module):
            devices, autocast = set(), []
            for m in module.modules():
                if isinstance(m, torch.fx.GraphModule):
                    for n in m.graph.nodes:
                        torch.fx.node.map_aggregate((n.args, n.kwargs), lambda v: devices.add(v.type) if isinstance(v, torch.device) else v)
                        if n.target is torch.ops.higher_order.wrap_with_autocast:
                            autocast.append(n.args[0])
            return devices, autocast

        before = seen(gm)
        graphs_on_device(gm, "cpu", "cpu")
        self.assertEqual(seen(gm), before)
        self.assertTrue(before[1] and set(before[1]) == {"cpu"})
        graphs_on_device(gm, "cuda:0", "cpu")  # torch.device objects only: no GPU needed
        devices, autocast = seen(gm)
        self.assertEqual(devices - {"cuda"}, set())
        self.assertEqual(set(autocast), {"cuda"})

    def test_what_is_not_a_region_is_a_load_failure(self):
        self.assertEqual(failure(self, lambda: Archive.load(self.FIXTURE, inline={"linear": {"nodes": {}, "values": {}}}))[0],
                         "load_failed")


class RegionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.archive = Archive.load(ARCHIVE)
        cls.x = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
        cls.state = cls.archive.state
        cls.linear = torch.nn.functional.linear(cls.x, cls.state["p_fc1_weight"], cls.state["p_fc1_bias"])

    def call(self, gm, names, **values):
        values = {**self.state, **values}
        return gm(*(values[n] for n in names))

    def test_archive(self):
        self.assertEqual(self.archive.node_count(), 3)
        self.assertEqual(sorted(self.archive.state), sorted(WEIGHTS))
        self.assertEqual(self.archive.device, "cpu")

    def test_fused_region_keeps_names_and_computes_the_graph(self):
        gm, names = self.archive.region_module(["linear", "relu", "linear_1"], ["x"] + WEIGHTS, ["linear_1"])
        self.assertEqual(names, ["x"] + WEIGHTS)
        self.assertEqual(placeholders(gm), ["x"] + WEIGHTS)
        self.assertEqual(ops(gm), ["linear", "relu", "linear_1"])
        self.assertEqual(outputs(gm), ["linear_1"])
        (got,) = self.call(gm, names, x=self.x)
        self.assertTrue(torch.equal(got, torch.export.load(ARCHIVE).module()(self.x)))

    def test_fused_part_of_the_graph_in_the_order_asked(self):
        gm, names = self.archive.region_module(["linear_1", "relu"], ["linear", "p_fc2_weight", "p_fc2_bias"],
                                               ["linear_1", "relu"])
        self.assertEqual(ops(gm), ["relu", "linear_1"])  # graph order, whatever the order asked
        self.assertEqual(outputs(gm), ["linear_1", "relu"])
        out, relu = self.call(gm, names, linear=self.linear)
        self.assertTrue(torch.equal(relu, self.linear.relu()))
        self.assertTrue(torch.equal(out, torch.nn.functional.linear(relu, self.state["p_fc2_weight"], self.state["p_fc2_bias"])))

    def test_exploded_region_reads_placeholders_only(self):
        names_in = ["x", "linear", "relu"] + WEIGHTS
        gm, names = self.archive.region_module(["linear", "relu", "linear_1"], names_in, ["linear", "relu", "linear_1"],
                                               exploded=True)
        # The inputs keep their names; the copies of nodes whose names the inputs took are renamed by fx
        # (the engine reads outputs by position).
        self.assertEqual(placeholders(gm), names_in)
        self.assertEqual([n.target for n in gm.graph.nodes if n.op == "call_function"],
                         [torch.ops.aten.linear.default, torch.ops.aten.relu.default, torch.ops.aten.linear.default])
        for n in gm.graph.nodes:
            if n.op == "call_function":
                self.assertTrue(all(a.op == "placeholder" for a in n.all_input_nodes), n.name)
        relu_in = -self.linear  # not relu(linear): linear_1 must read the input given, not relu's value
        linear, relu, out = self.call(gm, names, x=self.x, linear=self.linear, relu=relu_in)
        self.assertTrue(torch.equal(linear, self.linear))
        self.assertTrue(torch.equal(relu, self.linear.relu()))
        self.assertTrue(torch.equal(out, torch.nn.functional.linear(relu_in, self.state["p_fc2_weight"], self.state["p_fc2_bias"])))

    def test_eager_nodes_break_the_graph_and_run_in_eager_pytorch(self):
        gm, names = self.archive.region_module(["linear", "relu", "linear_1"], ["x"] + WEIGHTS, ["linear_1"],
                                               eager=["relu"])
        self.assertEqual(ops(gm), ["linear", "relu", "linear_1"])  # names kept: the kernel map and reports read them
        relu = next(n for n in gm.graph.nodes if n.name == "relu")
        self.assertNotEqual(relu.target, torch.ops.aten.relu.default)
        (got,) = self.call(gm, names, x=self.x)
        self.assertTrue(torch.equal(got, torch.export.load(ARCHIVE).module()(self.x)))
        # torch.compile sees a torch.compiler.disable'd call there: one graph break, two compiled graphs.
        explained = torch._dynamo.explain(gm)(*(dict(self.state, x=self.x)[n] for n in names))
        self.assertEqual(explained.graph_break_count, 1)
        self.assertEqual(explained.graph_count, 2)

    def test_eager_nodes_must_be_in_the_region(self):
        self.assertEqual(failure(self, lambda: self.archive.region_module(["relu"], ["linear"], ["relu"], eager=["linear_1"]))[0],
                         "bad_request")

    def test_exploded_input_may_be_an_output(self):
        gm, _ = self.archive.region_module(["relu"], ["linear"], ["linear", "relu"], exploded=True)
        self.assertEqual(outputs(gm), ["linear", "relu"])

    def test_bad_regions_are_bad_requests(self):
        r = self.archive.region_module
        self.assertEqual(failure(self, lambda: r(["nope"], [], [])), ("bad_request", "node 'nope' is not in the archive's graph"))
        self.assertEqual(failure(self, lambda: r(["relu"], ["zz"], [])), ("bad_request", "input 'zz' is not in the archive's graph"))
        self.assertEqual(failure(self, lambda: r(["relu"], ["linear"], ["zz"])),
                         ("bad_request", "output 'zz' is not in the archive's graph"))
        self.assertEqual(failure(self, lambda: r(["relu"], ["linear"], ["linear_1"])),
                         ("bad_request", "output 'linear_1' is not defined in the region"))
        self.assertEqual(failure(self, lambda: r(["linear", "relu"], ["x"], ["relu"])),
                         ("bad_request", "node 'linear' reads 'p_fc1_weight', which is neither a region input "
                                         "nor defined in the region"))
        self.assertEqual(failure(self, lambda: r(["linear", "relu"], ["x"] + WEIGHTS, ["relu"], exploded=True)),
                         ("bad_request", "node 'relu' reads 'linear', which is neither a region input "))

    def test_region_inputs_fill_weights_and_refuse_what_is_missing(self):
        path = os.path.join(TMP, "inputs.pt")
        torch.save((("x", self.x), ("n", 3)), path)
        x, w, n = self.archive.region_inputs(path, ["x", "p_fc1_weight", "n"])
        self.assertTrue(torch.equal(x, self.x) and w is self.state["p_fc1_weight"])
        self.assertEqual(n, 3)
        self.assertEqual(failure(self, lambda: self.archive.region_inputs(path, ["y"])),
                         ("bad_request", "no value for region input 'y'"))
        bad = os.path.join(TMP, "bad.pt")
        with open(bad, "w") as f:
            f.write("not a torch.save file")
        kind, message = failure(self, lambda: self.archive.region_inputs(bad, ["x"]))
        self.assertEqual(kind, "bad_request")
        self.assertTrue(message.startswith(f"cannot read inputs {bad}: "), message)

    def test_baked_devices_follow_the_device_asked(self):
        ep = torch.export.export(WithFactory(), (torch.randn(4),))
        by_name = {n.name: n for n in ep.graph_module.graph.nodes}
        factory = next(n.name for n in ep.graph.nodes if n.op == "call_function" and "device" in n.kwargs)
        user_input = next(n.name for n in ep.graph.nodes if n.op == "placeholder")
        nodes = ops(ep.graph_module)
        for device, expected in ((None, torch.device("cpu")), ("meta", torch.device("meta"))):
            gm, _ = region_module(ep.graph_module, by_name, nodes, [user_input], [nodes[-1]], device=device)
            self.assertEqual(next(n for n in gm.graph.nodes if n.name == factory).kwargs["device"], expected)

    def test_fused_attention_becomes_math_attention(self):
        flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
        g = torch.fx.Graph()
        q, k, v = g.placeholder("q"), g.placeholder("k"), g.placeholder("v")
        attention = g.call_function(flash, (q, k, v))
        attention.name = "attention"
        out = g.call_function(operator.getitem, (attention, 0))
        g.output((out,))
        renamed = attention_on_cpu(g, {flash._schema.name})
        self.assertEqual(list(renamed), ["attention"])
        self.assertIs(renamed["attention"].target, math_attention)
        gen = torch.Generator().manual_seed(2)
        qkv = [torch.randn(2, 3, 4, 5, generator=gen) for _ in range(3)]
        (got,) = torch.fx.GraphModule(torch.nn.Module(), g)(*qkv)
        expected = torch.ops.aten._scaled_dot_product_attention_math.default(*qkv)[0]
        self.assertTrue(torch.equal(got, expected))

    def test_fused_attention_read_beyond_its_output_is_refused(self):
        flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
        g = torch.fx.Graph()
        q, k, v = g.placeholder("q"), g.placeholder("k"), g.placeholder("v")
        attention = g.call_function(flash, (q, k, v))
        lse = g.call_function(operator.getitem, (attention, 1))
        g.output((g.call_function(torch.ops.aten.exp.default, (lse,)),))
        kind, message = failure(self, lambda: attention_on_cpu(g, {flash._schema.name}))
        self.assertEqual(kind, "load_failed")
        self.assertIn("reads output 1 of the CUDA-only fused attention", message)

    def test_math_attention_keeps_the_fused_kernels_strides(self):
        gen = torch.Generator().manual_seed(3)
        q, k, v = (torch.randn(2, 3, 4, 5, generator=gen) for _ in range(3))
        stride = (60, 5, 15, 1)  # (batch, seq, head, dim) in memory, as the fused kernels lay it out
        out, none = math_attention(q, k, v, None, 0.0, False, None, False, stride, 2)
        self.assertEqual(out.stride(), stride)
        self.assertIsNone(none)
        self.assertTrue(torch.equal(out, torch.ops.aten._scaled_dot_product_attention_math.default(q, k, v)[0]))


class Handler:
    """A protocol handler for the loop's tests."""

    def hello(self, req):
        return {"protocol": 1}

    def load(self, req):
        raise Failure("load_failed", "no such archive\nsecond line", details="the whole story")

    def compile(self, req):
        raise ValueError("boom\nmore")

    def forget(self, req):
        return None

    def secret(self, req):  # not a protocol op: never called
        raise AssertionError("called")


def exchange(handler, *requests):
    """Replies (seconds checked and dropped) and stderr of serve() on in-memory files."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in requests]
    replies, log = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(log):
        serve(handler, requests=io.StringIO("".join(line + "\n" for line in lines)), replies=replies)
    result = []
    for line in replies.getvalue().splitlines():
        reply = json.loads(line)
        assert isinstance(reply.pop("seconds"), float)
        result.append(reply)
    return result, log.getvalue()


class ProtocolTest(unittest.TestCase):
    def test_hello_and_shutdown(self):
        got, _ = exchange(Worker(), {"id": 1, "op": "hello"}, {"id": 2, "op": "shutdown"}, {"id": 3, "op": "hello"})
        self.assertEqual(len(got), 2)  # nothing after shutdown
        self.assertEqual(got[0]["protocol"], 1)
        self.assertEqual(got[0]["worker"], "inductor")
        self.assertEqual(got[0]["cache_dir"], os.environ["TORCHINDUCTOR_CACHE_DIR"])
        self.assertEqual(got[1], {"id": 2, "ok": True})

    def test_unknown_op_is_a_bad_request_with_the_same_id(self):
        got, _ = exchange(Handler(), {"id": 7, "op": "frobnicate"}, {"id": 8, "op": "secret"}, {"id": 9, "op": "run"})
        for reply, op in zip(got, ("frobnicate", "secret", "run")):
            self.assertEqual(reply, {"id": reply["id"], "ok": False, "error": "bad_request", "message": f"unknown op '{op}'"})
        self.assertEqual([r["id"] for r in got], [7, 8, 9])

    def test_failure_gives_its_kind_and_first_line(self):
        got, log = exchange(Handler(), {"id": 4, "op": "load"})
        self.assertEqual(got, [{"id": 4, "ok": False, "error": "load_failed", "message": "no such archive"}])
        self.assertIn("the whole story", log)  # details go to the log, not the reply

    def test_a_bug_is_a_worker_error_with_its_traceback_logged(self):
        got, log = exchange(Handler(), {"id": 5, "op": "compile"})
        self.assertEqual(got, [{"id": 5, "ok": False, "error": "worker_error", "message": "ValueError: boom"}])
        self.assertIn("Traceback", log)

    def test_lines_that_are_not_json_blank_lines_and_empty_replies(self):
        got, _ = exchange(Handler(), "not json", "", "   ", {"id": 6, "op": "forget"})
        self.assertEqual(got, [{"ok": False, "error": "worker_error",
                                "message": "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"},
                               {"id": 6, "ok": True}])

    def test_a_dict_of_callables_is_a_handler(self):
        got, _ = exchange({"hello": lambda req: {"protocol": 1, "echo": req["id"]}}, {"id": 3, "op": "hello"})
        self.assertEqual(got, [{"id": 3, "protocol": 1, "echo": 3, "ok": True}])

    def test_worker_requests_out_of_order(self):
        got, _ = exchange(Worker(), {"id": 1, "op": "compile", "region": "g"}, {"id": 2, "op": "export"},
                          {"id": 3, "op": "run", "region": "g"}, {"id": 4, "op": "forget", "region": "g"},
                          {"id": 5, "op": "load", "archive": ARCHIVE, "device": "cpu",
                           "op_libraries": ["/nonexistent/libops.so"]})
        self.assertEqual([(r["id"], r.get("error"), r.get("message")) for r in got[:4]],
                         [(1, "bad_request", "compile before load"), (2, "bad_request", "export before load"),
                          (3, "bad_request", "no compiled region 'g'"), (4, None, None)])
        self.assertEqual(got[4]["error"], "load_failed")
        self.assertTrue(got[4]["message"].startswith("--load-library /nonexistent/libops.so: OSError: "), got[4]["message"])

    def test_serve_keeps_stdout_for_the_protocol(self):
        # A real process: serve() without `replies` points file descriptor 1 at stderr.
        script = ("import os, sys\nsys.path.insert(0, sys.argv[1])\nfrom pt2diff_worker.protocol import serve\n"
                  "class H:\n    def hello(self, req):\n        print('noise from a print')\n"
                  "        os.system('echo noise from a subprocess')\n        return {'protocol': 1}\nserve(H())\n")
        p = subprocess.run([sys.executable, "-c", script, PYTHON_DIR], capture_output=True, text=True, timeout=60,
                           input='{"id": 1, "op": "hello"}\n{"id": 2, "op": "shutdown"}\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([json.loads(line)["id"] for line in p.stdout.splitlines()], [1, 2])
        self.assertIn("noise from a print", p.stderr)
        self.assertIn("noise from a subprocess", p.stderr)


class CliTest(unittest.TestCase):
    def test_cache_dir_per_cpu_capability(self):
        self.assertEqual(cli.inductor_cache_dir("/c", ""), "/c")
        self.assertEqual(cli.inductor_cache_dir("/c", "  "), "/c")
        self.assertEqual(cli.inductor_cache_dir("/c", None), "/c")
        self.assertEqual(cli.inductor_cache_dir("/c", " AVX512 "), "/c/aten-cpu-avx512")
        env = {"ATEN_CPU_CAPABILITY": "default"}
        self.assertEqual(cli.setup_environment("/c", env), "/c/aten-cpu-default")
        self.assertEqual(env["TORCHINDUCTOR_CACHE_DIR"], "/c/aten-cpu-default")
        env = {"ATEN_CPU_CAPABILITY": "avx2", "TORCHINDUCTOR_CACHE_DIR": "/mine"}
        self.assertEqual(cli.setup_environment("/c", env), "/mine")  # the user's setting wins
        self.assertEqual(env["TORCHINDUCTOR_CACHE_DIR"], "/mine")
        # The default Inductor writes into the environment when it is imported first is not the user's setting.
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
        env = {"TORCHINDUCTOR_CACHE_DIR": default_cache_dir()}
        self.assertTrue(cli.inductor_set_its_default(env))
        self.assertEqual(cli.setup_environment("/c", env), "/c")
        self.assertFalse(cli.inductor_set_its_default({"TORCHINDUCTOR_CACHE_DIR": "/mine"}))

    def test_a_passed_vec_isa_check_is_remembered(self):
        from torch._inductor import cpu_vec_isa
        original, original_build = cpu_vec_isa.VecISA._probe_load, cpu_vec_isa.VecISA.check_build
        calls = []
        answer = {"value": True}

        def probe(isa, path):  # stands for Inductor's: a new Python process that loads the probe library
            calls.append(path)
            return answer["value"]
        try:
            with tempfile.TemporaryDirectory() as tmp:
                lib = os.path.join(tmp, "probe.so")
                with open(lib, "w") as f:
                    f.write("x")
                cpu_vec_isa.VecISA._probe_load = probe
                memo = cli.remember_vec_isa_probes(tmp)
                self.assertEqual(memo, os.path.join(tmp, "vec_isa_probes.json"))
                isa = cpu_vec_isa.VecAVX2()
                self.assertTrue(cpu_vec_isa.VecISA._probe_load(isa, lib))
                self.assertTrue(cpu_vec_isa.VecISA._probe_load(isa, lib))  # remembered: no second process
                self.assertEqual(len(calls), 1)
                os.utime(lib, ns=(1, 1))  # another file at that path: checked again
                self.assertTrue(cpu_vec_isa.VecISA._probe_load(isa, lib))
                self.assertEqual(len(calls), 2)
                other = os.path.join(tmp, "other.so")
                with open(other, "w") as f:
                    f.write("y")
                answer["value"] = False  # a failed check is made again each time, as Inductor makes it
                self.assertFalse(cpu_vec_isa.VecISA._probe_load(isa, other))
                self.assertFalse(cpu_vec_isa.VecISA._probe_load(isa, other))
                self.assertEqual(len(calls), 4)
        finally:
            cpu_vec_isa.VecISA._probe_load, cpu_vec_isa.VecISA.check_build = original, original_build

    def test_the_vec_isa_probe_is_built_in_the_workers_cache_when_caches_are_off(self):
        # force_disable_caches points Inductor at a fresh directory per compile: the probe library is built (and
        # its check remembered) in the worker's cache all the same, and the fresh directory is back afterwards.
        from torch._inductor import cpu_vec_isa
        original_probe, original_build = cpu_vec_isa.VecISA._probe_load, cpu_vec_isa.VecISA.check_build
        seen = []

        def check_build(isa, code):  # stands for Inductor's: builds under $TORCHINDUCTOR_CACHE_DIR
            seen.append(os.environ.get("TORCHINDUCTOR_CACHE_DIR"))
            return True
        saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        try:
            with tempfile.TemporaryDirectory() as tmp:
                cpu_vec_isa.VecISA.check_build = check_build
                cli.remember_vec_isa_probes(tmp)
                isa = cpu_vec_isa.VecAVX2()
                fresh = os.path.join(tmp, "fresh")
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = fresh
                self.assertTrue(isa.check_build("int main() {}"))
                self.assertEqual(seen, [tmp])
                self.assertEqual(os.environ["TORCHINDUCTOR_CACHE_DIR"], fresh)
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = tmp
                self.assertTrue(isa.check_build("int main() {}"))
                self.assertEqual(seen, [tmp, tmp])
        finally:
            cpu_vec_isa.VecISA._probe_load, cpu_vec_isa.VecISA.check_build = original_probe, original_build
            if saved is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved

    def test_a_wrapper_that_imports_inductor_first_gets_the_workers_cache(self):
        # A planted-bug wrapper (tests/zoo/planted_worker.py) imports Inductor before the worker's main(), and
        # Inductor then writes its default, under TMPDIR, into the environment: the engine removes that TMPDIR
        # after each worker, so every kernel was built again by every such worker. The worker's cache wins.
        script = ("import sys\nsys.path.insert(0, sys.argv[1])\nfrom torch._inductor import config\n"
                  "from pt2diff_worker import cli\ncli.main(['--cache-dir', sys.argv[2]])\n")
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if k not in ("TORCHINDUCTOR_CACHE_DIR", "ATEN_CPU_CAPABILITY")}
            p = subprocess.run([sys.executable, "-c", script, PYTHON_DIR, os.path.join(tmp, "cache")], capture_output=True,
                               text=True, timeout=120, env=dict(env, TMPDIR=tmp),
                               input='{"id": 1, "op": "hello"}\n{"id": 2, "op": "shutdown"}\n')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout.splitlines()[0])["cache_dir"], os.path.join(tmp, "cache"))

    def test_precompiled_headers_are_kept_with_the_cache(self):
        from torch._inductor import codecache
        saved = (codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR)
        try:
            self.assertEqual(cli.keep_precompiled_headers_in_cache("/c/aten-cpu-avx2"), "/c/aten-cpu-avx2/precompiled_headers")
            self.assertEqual((codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR),
                             ("/c/aten-cpu-avx2/precompiled_headers", "/c/aten-cpu-avx2/precompiled_headers/locks"))
            # Without an argument: the cache directory in force (cli.main sets it first).
            self.assertEqual(cli.keep_precompiled_headers_in_cache(), os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "precompiled_headers"))
        finally:
            codecache._HEADER_DIR, codecache._HEADER_LOCK_DIR = saved

    def test_arguments(self):
        self.assertEqual(cli.parse_args([]).cache_dir, os.path.expanduser("~/.cache/pt2diff/inductor"))
        self.assertEqual(cli.parse_args(["--cache-dir", "/x"]).cache_dir, "/x")
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            cli.parse_args(["--bogus"])

    def test_imports_have_no_side_effects(self):
        script = ("import os, sys\nsys.path.insert(0, sys.argv[1])\nsys.argv = ['x', '--bogus']\n"
                  "import pt2diff_worker, pt2diff_worker.protocol, pt2diff_worker.cli\n"
                  "print('torch' in sys.modules, 'TORCHINDUCTOR_CACHE_DIR' in os.environ)\n"
                  "import pt2diff_worker.regions, pt2diff_worker.archive, pt2diff_worker.inductor\n"
                  "print('stdout is still stdout', 'TORCHINDUCTOR_CACHE_DIR' in os.environ)\n")
        env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
        p = subprocess.run([sys.executable, "-c", script, PYTHON_DIR], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines(), ["False False", "stdout is still stdout False"])

    def test_launcher_serves_with_the_cache_dir_of_its_capability(self):
        env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
        env["ATEN_CPU_CAPABILITY"] = "default"
        cache = os.path.join(TMP, "launcher-cache")
        p = subprocess.run([sys.executable, LAUNCHER, "--cache-dir", cache], capture_output=True, text=True, env=env,
                           timeout=120, input='{"id": 1, "op": "hello"}\n{"id": 2, "op": "shutdown"}\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        hello, bye = (json.loads(line) for line in p.stdout.splitlines())
        self.assertEqual((hello["id"], hello["ok"], hello["protocol"]), (1, True, 1))
        self.assertEqual(hello["cache_dir"], os.path.join(cache, "aten-cpu-default"))
        self.assertEqual(bye, {"id": 2, "ok": True, "seconds": 0.0})

    def test_launcher_finds_the_package_installed_next_to_it_and_reexports(self):
        share = os.path.join(TMP, "prefix", "share", "pt2diff")
        shutil.copytree(os.path.join(PYTHON_DIR, "pt2diff_worker"), os.path.join(share, "pt2diff_worker"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(LAUNCHER, share)
        for path, expected in ((os.path.join(share, "inductor_worker.py"), share), (LAUNCHER, PYTHON_DIR)):
            spec = importlib.util.spec_from_file_location("inductor_worker_under_test", path)
            module = importlib.util.module_from_spec(spec)
            saved = list(sys.path)
            try:
                spec.loader.exec_module(module)
                self.assertEqual(sys.path[0], os.path.normpath(expected))
                self.assertIs(module.Worker, Worker)  # what tests/device/*.py import from the launcher
                self.assertIs(module.torch_settings, torch_settings)
            finally:
                sys.path[:] = saved


class AotiTest(unittest.TestCase):
    def test_compilers_and_hello(self):
        self.assertEqual(Worker("aoti").hello({})["worker"], "aoti")
        self.assertEqual(Worker().hello({})["worker"], "inductor")
        with self.assertRaises(ValueError):
            Worker("tvm")
        self.assertEqual(cli.parse_args(["--compiler", "aoti"]).compiler, "aoti")
        self.assertEqual(cli.parse_args([]).compiler, "inductor")

    def test_saved_buffers_are_read_back_in_line_order_and_others_ignored(self):
        from pt2diff_worker import kernel_map
        payloads = [{"buffer": "buf0"}, {"buffer": "buf1"}, {"buffer": "buf2"}]
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "tmp"))
            # AOTI's own names: <dir>/tmp/aoti_torch<launch>_<kernel>_<tensor>_<device>.pt (2.13 has no slash)
            for k in (2, 0):
                torch.save(torch.full((2,), float(k)), os.path.join(d, "tmp", f"aoti_torchafter_launch_pt2diff_pt2diffobs{k}_cpu.pt"))
            torch.save(torch.ones(1), os.path.join(d, "tmp", "aoti_torchafter_launch_pt2diff_pt2diffobs7_cpu.pt"))  # no payload
            torch.save(torch.ones(1), os.path.join(d, "tmp", "aoti_torchbefore_launch_cpp_fused_0_buf0_cpu.pt"))  # not ours
            got = kernel_map.aoti_saved(d, payloads)
        self.assertEqual([p["buffer"] for p, _ in got], ["buf0", "buf2"])
        self.assertTrue(torch.equal(got[1][1], torch.full((2,), 2.0)))

    def test_eager_nodes_are_refused(self):
        w = Worker("aoti")
        w.archive = object()  # compile refuses before it reads the archive's regions
        w.region_module = lambda *a, **k: (torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()), [])
        w.region_inputs = lambda *a, **k: []
        with self.assertRaises(Failure) as e:
            w.compile({"region": "r", "nodes": ["a"], "inputs": [], "outputs": [], "example_inputs": "", "eager": ["a"]})
        self.assertEqual(e.exception.kind, "compile_failed")
        self.assertIn("cannot leave nodes eager", str(e.exception))


class WrittenInputsTest(unittest.TestCase):
    def test_writes_through_views_and_running_statistics(self):
        # What a region writes in place, followed back to its placeholders: the weights the worker must copy.
        g = torch.fx.Graph()
        x, y, mean, var, w = (g.placeholder(n) for n in ("x", "y", "mean", "var", "w"))
        view = g.call_function(torch.ops.aten.slice.Tensor, (x, 0, 0, 2))
        g.call_function(torch.ops.aten.add_.Tensor, (view, 1.0))  # into x, through a view
        g.call_function(torch.ops.aten.mul.Tensor, (y, w))  # reads only
        bn = g.call_function(torch.ops.aten.batch_norm.default, (y, None, None, mean, var, True, 0.1, 1e-5, False))
        g.output((bn,))
        self.assertEqual(written_inputs(torch.fx.GraphModule(torch.nn.Module(), g)), {"x", "mean", "var"})


class SettingsTest(unittest.TestCase):
    def test_config_values_are_python_literals_or_text(self):
        cases = {"True": True, "False": False, "None": None, "3": 3, "1e-3": 1e-3, "'x'": "x", "[1, 2]": [1, 2],
                 "{'a': 1}": {"a": 1}, "max-autotune": "max-autotune", "foo bar": "foo bar", "": "", "x=1": "x=1"}
        for text, value in cases.items():
            self.assertEqual(config_value(text), value, text)
            self.assertEqual(type(config_value(text)), type(value), text)

    def test_torch_settings_are_put_back(self):
        before = (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32,
                  torch.backends.cudnn.allow_tf32)
        with torch_settings({"matmul_precision": "medium"}):
            self.assertEqual(torch.get_float32_matmul_precision(), "medium")
        with torch_settings({"matmul_precision": "highest", "tf32": False}):
            self.assertEqual(torch.get_float32_matmul_precision(), "highest")
            self.assertFalse(torch.backends.cuda.matmul.allow_tf32)
            self.assertFalse(torch.backends.cudnn.allow_tf32)
        # TF32 off after precision "high" (the flags a user may pass together) is a state torch reads back.
        with torch_settings({"matmul_precision": "high", "tf32": False}):
            self.assertEqual(torch.get_float32_matmul_precision(), "highest")
            self.assertFalse(torch.backends.cuda.matmul.allow_tf32)
            self.assertFalse(torch.backends.cudnn.allow_tf32)
        with self.assertRaises(RuntimeError), torch_settings({"matmul_precision": "high"}):
            self.assertTrue(torch.backends.cuda.matmul.allow_tf32)
            raise RuntimeError("in the region")
        self.assertEqual((torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32,
                          torch.backends.cudnn.allow_tf32), before)


class InductorTest(unittest.TestCase):
    def test_dynamic_dims_compile_symbolic_and_serve_every_size(self):
        """fixtures/dynamic_batch.pt2 (batch exported in [2, 64]): the whole graph compiled dynamic with the exported
        range, no guard beyond it, other sizes run without a recompile (results of their shape); dynamic false is static."""
        from pt2diff_worker import shapes
        archive = os.path.join(REPO, "fixtures", "dynamic_batch.pt2")
        w = Worker()
        w.load({"archive": archive})
        nodes = [n.name for n in w.program.graph.nodes if n.op == "call_function"]
        region = {"nodes": nodes, "inputs": ["p_fc_weight", "p_fc_bias", "x"], "outputs": ["sum_1"]}
        example = os.path.join(TMP, "dyn_example.pt")
        torch.save((("x", torch.randn(6, 16)),), example)
        reply = w.compile({"region": "d", **region, "example_inputs": example})
        self.assertEqual(reply["shapes"]["mode"], "dynamic", reply)
        self.assertEqual(reply["shapes"]["symbols"], [{"symbol": reply["shapes"]["symbols"][0]["symbol"], "source": "x.size(0)",
                                                       "min": 2, "max": 64}])
        self.assertEqual(reply["shapes"]["dims"], [{"input": "x", "dim": 0, "symbol": "s77", "min": 2, "max": 64}])
        gm, _ = w.archive.region_module(nodes, region["inputs"], region["outputs"])
        for batch in (3, 17, 64):
            x = torch.randn(batch, 16)
            torch.save((("x", x),), example)
            out_file = os.path.join(TMP, "dyn_out.pt")
            self.assertEqual(w.run({"region": "d", "inputs": example, "outputs_file": out_file}), {}, batch)  # no recompile
            (got,) = torch.load(out_file, weights_only=True)
            with torch.no_grad():
                (want,) = gm(w.state["p_fc_weight"], w.state["p_fc_bias"], x)
            self.assertEqual(got.shape, want.shape)
        static = w.compile({"region": "s", **region, "example_inputs": example, "dynamic": False})["shapes"]
        self.assertEqual((static["mode"], static["symbols"]), ("static", []), static)
        self.assertIn("--static", static["why_static"])
        # What the compile could not keep, named as the user names the inputs.
        self.assertEqual(shapes._readable("L['x'].size()[0]"), "x.size(0)")
        self.assertEqual(shapes._readable("L['mul']"), "mul")

    def test_a_compiled_region_equals_eager_bit_for_bit(self):
        gen = torch.Generator().manual_seed(4)
        example, inputs = os.path.join(TMP, "example.pt"), os.path.join(TMP, "run_inputs.pt")
        torch.save((("x", torch.randn(3, 8, generator=gen)),), example)
        x = torch.randn(3, 8, generator=gen)
        torch.save((("x", x),), inputs)
        out_file = os.path.join(TMP, "outputs.pt")
        region = {"region": "r", "nodes": ["linear", "relu"], "inputs": ["x", "p_fc1_weight", "p_fc1_bias"],
                  "outputs": ["relu", "linear"]}
        got, log = exchange(Worker(), {"id": 1, "op": "load", "archive": ARCHIVE, "model": "m", "device": "cpu"},
                            {"id": 2, "op": "compile", **region, "exploded": False, "example_inputs": example,
                             "config": {"fallback_random": "True"}, "settings": {"matmul_precision": "highest"}},
                            {"id": 3, "op": "run", "region": "r", "inputs": inputs, "outputs_file": out_file, "seed": 1},
                            {"id": 4, "op": "forget", "region": "r"},
                            {"id": 5, "op": "run", "region": "r", "inputs": inputs, "outputs_file": out_file})
        static = {"mode": "static", "why_static": "no input of the region has a dynamic dim", "dims": [], "symbols": [],
                  "guards": [], "compiles": 1}  # no dynamic dim: compiled at the inputs' sizes (shapes.py)
        self.assertEqual(got[:4], [{"id": 1, "nodes": 3, "ok": True}, {"id": 2, "shapes": static, "ok": True},
                                   {"id": 3, "ok": True}, {"id": 4, "ok": True}], log)
        self.assertEqual(got[4], {"id": 5, "ok": False, "error": "bad_request", "message": "no compiled region 'r'"})
        relu, linear = torch.load(out_file, weights_only=True)
        archive = Archive.load(ARCHIVE)
        gm, names = archive.region_module(region["nodes"], region["inputs"], region["outputs"])
        eager_relu, eager_linear = gm(x, *(archive.state[n] for n in names[1:]))
        self.assertTrue(torch.equal(linear, eager_linear), (linear - eager_linear).abs().max())
        self.assertTrue(torch.equal(relu, eager_relu), (relu - eager_relu).abs().max())

    def test_a_bad_config_key_is_a_failed_compile(self):
        example = os.path.join(TMP, "example_bad_config.pt")
        torch.save((("linear", torch.ones(3, 16)),), example)
        w = Worker()
        w.load({"archive": ARCHIVE})
        kind, message = failure(self, lambda: w.compile({"region": "r", "nodes": ["relu"], "inputs": ["linear"],
                                                          "outputs": ["relu"], "example_inputs": example,
                                                          "config": {"no_such_key": "1"}}))
        self.assertEqual((kind, message), ("compile_failed", "AttributeError: torch._inductor.config.no_such_key does not exist"))


class Blocks(torch.nn.Module):
    """Three alike blocks (the ops of each share a signature with the others'), a multi-output op in each, and one
    linear on a transposed input (its strides differ from the others': an op apart)."""

    def __init__(self):
        super().__init__()
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(8) for _ in range(3))
        self.fcs = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        for norm, fc in zip(self.norms, self.fcs):
            var, mean = torch.var_mean(x, dim=-1, keepdim=True)
            x = x + torch.nn.functional.gelu(fc(norm(x))) * var + mean
        return torch.nn.functional.linear(x.t(), self.fcs[0].weight[:, :6])


class DistinctOpsTest(unittest.TestCase):
    """The exploded compile of repeated layers compiles each distinct op once (distinct_ops.py) and gives the
    numbers of the exploded graph compiled whole, bit for bit."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(2)
        cls.archive = os.path.join(TMP, "blocks.pt2")
        x = torch.randn(6, 8)
        program = torch.export.export(Blocks(), (x,))
        torch.export.save(program, cls.archive)
        gm = program.graph_module
        state = Archive.load(cls.archive).state
        values = {}

        class Recording(torch.fx.Interpreter):
            def run_node(self, n):
                values[n.name] = super().run_node(n)
                return values[n.name]

        with torch.no_grad():  # as the engine's values
            Recording(gm).run(*(state.get(n.name, x) for n in gm.graph.nodes if n.op == "placeholder"))
        ops = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
        cls.nodes = [n.name for n in ops]
        cls.inputs = sorted({a.name for n in ops for a in n.all_input_nodes})
        cls.outputs = [u.name for n in ops for u in (n.users if isinstance(values[n.name], tuple) else [n])]
        cls.example = os.path.join(TMP, "blocks_inputs.pt")
        torch.save(tuple((name, values[name]) for name in cls.inputs if name not in state), cls.example)

    def compiled(self, name, **extra):
        w = Worker()
        w.load({"archive": self.archive})
        region = {"region": name, "nodes": self.nodes, "inputs": self.inputs, "outputs": self.outputs, "exploded": True,
                  "example_inputs": self.example, **extra}
        w.compile(region)
        out = os.path.join(TMP, f"{name}_outputs.pt")
        w.run({"region": name, "inputs": self.example, "outputs_file": out})
        return w.regions[name][0], torch.load(out, weights_only=True)

    def test_each_distinct_op_compiles_once_and_the_numbers_are_the_whole_graphs(self):
        deduped, got = self.compiled("distinct")
        whole, expected = self.compiled("whole", distinct_ops=False)
        self.assertIsInstance(deduped, distinct_ops.DistinctOps)
        self.assertNotIsInstance(whole, distinct_ops.DistinctOps)
        # 3 x (var_mean, layer_norm, linear, gelu, mul, add, add) + t, slice, linear: 10 distinct of 24
        # one graph: the 3 ops that occur once are small (6x8): computed again in 2 more calls, not compiled apart
        self.assertEqual((len(self.nodes), deduped.distinct, deduped.graphs, deduped.calls), (24, 10, 1, 4))
        self.assertIsNone(deduped.fallback)
        self.assertEqual(len(got), len(expected))
        for name, a, b in zip(self.outputs, got, expected):
            self.assertTrue(torch.equal(a, b), name)

    def test_a_rare_costly_op_gets_its_own_graph_where_computing_it_again_costs_more(self):
        g = torch.fx.Graph()

        def node(target, args, *shape):
            n = g.call_function(target, args) if target else g.placeholder(args)
            n.meta["val"] = torch.empty(*shape, device="meta")
            return n

        outs = [node(torch.ops.aten.add.Tensor, (node(None, f"a{i}", 64), node(None, f"b{i}", 64)), 64) for i in range(4)]
        # one 4096^3 product (137 GFLOP: seconds on a CPU, about a millisecond on a GPU), one 8^3 product
        outs.append(node(torch.ops.aten.mm.default, (node(None, "x", 4096, 4096), node(None, "w", 4096, 4096)), 4096, 4096))
        outs.append(node(torch.ops.aten.mm.default, (node(None, "s", 8, 8), node(None, "t", 8, 8)), 8, 8))
        g.output(tuple(outs))
        gm = torch.fx.GraphModule(torch.nn.Module(), g)
        p = distinct_ops.plan(gm, [n.meta["val"] for n in g.nodes if n.op == "placeholder"])
        self.assertEqual([(len(x), str(x[0].target)) for x in p.groups],
                         [(4, "aten.add.Tensor"), (1, "aten.mm.default"), (1, "aten.mm.default")])
        # On the CPU the ops that occur once get a graph of their own (3 more calls of the large product: about 20 s
        # by the estimate). On a GPU one graph: the 3 more calls are milliseconds there, a compile is not.
        self.assertGreater(3 * distinct_ops.op_seconds(p.costs[1], "cpu"), distinct_ops.GRAPH_COMPILE_SECONDS)
        self.assertEqual(p.graphs("cpu"), [(1, [1, 2]), (4, [0])])
        self.assertEqual(p.graphs("cuda"), [(4, [0, 1, 2])])

    def test_ops_that_write_inputs_or_draw_random_numbers_keep_the_whole_graph(self):
        def exploded(target, *extra):
            g = torch.fx.Graph()
            a, b, c, d = (g.placeholder(n) for n in "abcd")
            g.output((g.call_function(target, (a, b, *extra)), g.call_function(target, (c, d, *extra))))
            return torch.fx.GraphModule(torch.nn.Module(), g)

        values = [torch.ones(4) for _ in range(4)]
        p = distinct_ops.plan(exploded(torch.ops.aten.add.Tensor), values)
        self.assertEqual(([len(g) for g in p.groups], p.graphs()), ([2], [(2, [0])]))
        self.assertIsNone(distinct_ops.plan(exploded(torch.ops.aten.add_.Tensor), values))  # resnet's residual add_
        self.assertIsNone(distinct_ops.plan(exploded(torch.ops.aten.native_dropout.default, True), [torch.ones(4), 0.5] * 2))
        # other sizes: two distinct ops, nothing to share
        self.assertIsNone(distinct_ops.plan(exploded(torch.ops.aten.add.Tensor), values[:3] + [torch.ones(1)]))

    def test_an_occurrence_unlike_its_compile_falls_back_to_the_whole_graph(self):
        w = Worker()
        w.load({"archive": self.archive})
        region = {"region": "r", "nodes": self.nodes, "inputs": self.inputs, "outputs": self.outputs, "exploded": True,
                  "example_inputs": self.example}
        w.compile(region)
        sent = dict(torch.load(self.example, weights_only=True))
        name = next(n for n in self.inputs if n in sent and sent[n].shape == (6, 8))
        sent[name] = torch.empty(8, 6).t().copy_(sent[name])  # the same values, other strides: Dynamo's guards reject them
        changed = os.path.join(TMP, "blocks_changed.pt")
        torch.save(tuple(sent.items()), changed)
        out = os.path.join(TMP, "changed_outputs.pt")
        w.run({"region": "r", "inputs": changed, "outputs_file": out})
        compiled = w.regions["r"][0]
        self.assertIn("does not match its op's compile", compiled.fallback)
        _, expected = self.compiled("whole_again", distinct_ops=False)
        for o, a, b in zip(self.outputs, torch.load(out, weights_only=True), expected):
            self.assertTrue(torch.equal(a, b), o)


if __name__ == "__main__":
    unittest.main()
