"""The Python module against the CLI on the same fixtures: same JSON, same error lines, same options.

Run by ctest (python_module_tests) as
    PYTHONPATH=BUILD/python PT2DIFF_CLI=BUILD/pt2diff python -m unittest tests/python/pt2diff/test_module.py
Plain unittest, so pytest is not needed (pytest runs it too). The compiled side is the fault backend
(eager with a planted error): fast and deterministic. One test starts an external worker
(python/examples/eager_worker.py, ~8 s) for a program from memory; test_inductor.py has the Inductor run.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import torch

import pt2diff
from pt2diff.testing import assert_agrees

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures")
CLI = os.environ["PT2DIFF_CLI"]
FAULT = "fault:linear:scale=0.05"

# The fields of the report that name where the graph and inputs came from (a path for the CLI, a name
# for objects in memory) or time the run or measure its process's memory: nothing else may differ.
WHERE_FIELDS = [("graph",), ("inputs",)]
TIMING_FIELDS = [("seconds",), ("compiles", "*", "compile_seconds"), ("compiles", "*", "run_seconds"),
                 ("compiles", "*", "worker_start_seconds"),
                 ("localization", "seconds"), ("localization", "probes", "*", "seconds"), ("node_verdict", "confirmation", "seconds"),
                 ("devices", "start_host_bytes"), ("devices", "peak_host_bytes"), ("stages",)]


def fixture(name: str) -> str:
    return os.path.abspath(os.path.join(FIXTURES, name))


def drop(doc, path):
    """Removes the field at `path` ('*': every element of an array) from `doc`, insisting it is there."""
    head, rest = path[0], path[1:]
    if head == "*":
        for item in doc:
            drop(item, rest)
        return
    if doc is None:
        return
    assert head in doc, f"no field {head} in the report"
    if rest:
        drop(doc[head], rest)
    else:
        del doc[head]


def without(doc: dict, fields) -> dict:
    doc = json.loads(json.dumps(doc))
    for path in fields:
        drop(doc, path)
    return doc


def cli(*args, check_rc=None):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if check_rc is not None and p.returncode not in check_rc:
        raise AssertionError(f"pt2diff {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p


def cli_json(*args) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "report.json")
        cli(*args, "--json", out, check_rc=(0, 1, 4))
        with open(out) as f:
            return json.load(f)


def mlp_inputs():
    return torch.load(fixture("mlp_inputs.pt"), weights_only=True)


class JsonMatchesCli(unittest.TestCase):
    """pt2diff.diff on an in-memory ExportedProgram gives the CLI's --json document on the saved files."""

    def check(self, name: str, compiled: str, *flags: str, inputs_name: str = "", **options):
        inputs_file = fixture(f"{inputs_name or name}_inputs.pt")
        ep = torch.export.load(fixture(f"{name}.pt2"))
        inputs = torch.load(inputs_file, weights_only=True)
        r = pt2diff.diff(ep, inputs, compiled=compiled, **options)
        expected = cli_json(fixture(f"{name}.pt2"), inputs_file, "--compiled", compiled, *flags)
        got = json.loads(r.to_json())
        self.assertEqual(got["graph"], pt2diff.EXPORTED_PROGRAM_NAME)
        self.assertEqual(got["inputs"], pt2diff.PYTHON_INPUTS_NAME)
        self.assertEqual(without(got, WHERE_FIELDS + TIMING_FIELDS), without(expected, WHERE_FIELDS + TIMING_FIELDS))
        return r

    def test_planted_fault_localized(self):
        r = self.check("mlp", FAULT)
        self.assertEqual(r.verdict, "diverged")
        self.assertTrue(r.diverged and not r.compiled_failed and not r.agrees)
        self.assertEqual(r.culprit.nodes, ["linear"])
        self.assertEqual(r.culprit.ops, ["aten.linear.default"])
        self.assertIn("make_fixtures.py:", r.culprit.sources[0])
        self.assertTrue(r.hints and all(h.kind and h.finding and h.summary for h in r.hints))
        self.assertTrue(r.probes)
        self.assertFalse(r.outputs[0]["pass"])
        self.assertFalse(r.outputs[0].pass_)
        self.assertEqual([o.name for o in r.failing_outputs], [r.outputs[0].name])
        self.assertGreater(r.outputs[0].compiled_to_fp64.rmse, r.outputs[0].eager_to_fp64.rmse)
        self.assertEqual(r.nodes[0].name, json.loads(r.to_json())["nodes"][0]["name"])

    def test_agreeing_run(self):
        r = self.check("mlp", "eager")
        self.assertEqual(r.verdict, "agree")
        self.assertIsNone(r.localization)
        self.assertIsNone(r.culprit)
        self.assertEqual(r.hints, [])

    def test_keyword_inputs_and_options(self):
        # A dict of inputs (attention's mask is keyword-only) and options given as keywords and as flags.
        r = self.check("attention_core", "fault:aten.bmm#2:noise=0.05", "--rule", "allclose", "--tol", "1e-05", "--seed", "5",
                       "--no-exploded", "--top", "3", inputs_name="attention", rule="allclose", tol=1e-5, seed=5,
                       exploded=False, top=3)
        self.assertEqual(r.verdict, "diverged")
        self.assertEqual(len(r.ranking), 3)

    def test_node_verdict(self):
        # The output level off: only the node verdict (the exploded compile's evidence at linear_1) raises the run.
        sub_tolerance = "fault:linear#2:scale=2e-4"
        r = self.check("mlp", sub_tolerance, "--suspicious-ratio", "0", suspicious_ratio=0)
        self.assertEqual(r.level, "suspicious")
        self.assertTrue(r.agrees and not r.suspicious and r.outputs[0].level == "pass")
        self.assertEqual([f.node for f in r.node_findings], ["linear_1"])
        self.assertGreaterEqual(r.node_findings[0].ratio, 1000)
        self.assertEqual(r.culprit.nodes, ["linear_1"])
        self.assertEqual(r.localization.found_by, "node_evidence")
        with self.assertRaises(AssertionError) as caught:
            assert_agrees(fixture("mlp.pt2"), mlp_inputs(), compiled=sub_tolerance, suspicious_ratio=0, fail_on_suspicious=True)
        self.assertIn("at a node", str(caught.exception))
        failing = pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=sub_tolerance, suspicious_ratio=0, node_fail_ratio=100,
                               localize=False)
        self.assertEqual(failing.level, "fail")
        self.assertFalse(failing.agrees)
        self.assertEqual(pt2diff.cli_flags(fixture("mlp.pt2"), compiled=sub_tolerance, node_ratio=6, node_fail_ratio=50),
                         ["--compiled", sub_tolerance, "--node-ratio", "6", "--node-fail-ratio", "50"])
        with self.assertRaises(pt2diff.UsageError):
            pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=sub_tolerance, node_ratio=-1)

    def test_suspicious_level(self):
        # fc2 scaled by 1 + 2e-4: the rule passes, the output is far farther from fp64 than eager.
        sub_tolerance = "fault:linear#2:scale=2e-4"
        r = self.check("mlp", sub_tolerance, "--localize-suspicious", localize_suspicious=True)
        self.assertEqual(r.level, "suspicious")
        self.assertTrue(r.suspicious and r.agrees and r.outputs[0].pass_)
        self.assertEqual([o.name for o in r.suspicious_outputs], [r.outputs[0].name])
        self.assertGreaterEqual(r.outputs[0].error_ratio, 100)
        self.assertEqual(r.culprit.nodes, ["linear_1"])
        self.assertEqual(r.culprit.level, "suspicious")
        strict = self.check("mlp", sub_tolerance, "--fail-on-suspicious", fail_on_suspicious=True)
        self.assertFalse(strict.agrees)
        with self.assertRaises(AssertionError) as caught:
            assert_agrees(fixture("mlp.pt2"), mlp_inputs(), compiled=sub_tolerance, fail_on_suspicious=True)
        self.assertIn("suspicious", str(caught.exception))
        self.assertEqual(pt2diff.cli_flags(fixture("mlp.pt2"), compiled=sub_tolerance, suspicious_ratio=50, rule="relative",
                                           fail_on_suspicious=True, localize_suspicious=True),
                         ["--compiled", sub_tolerance, "--rule", "relative", "--suspicious-ratio", "50", "--fail-on-suspicious",
                          "--localize-suspicious"])

    def test_workaround(self):
        # relu scaled: left eager (the fault backend runs it without the fault), the graph passes.
        relu_fault = "fault:relu:scale=0.05"
        r = pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=relu_fault, workaround=True)
        self.assertFalse(r.agrees)  # the verdict stays the compiled graph's
        w = r.workaround
        self.assertEqual(w.conclusion, "found")
        self.assertEqual([n.node for n in w.nodes], ["relu"])
        self.assertTrue(w.verified and w.minimal)
        self.assertEqual(w.levers[0].kind, "source_line")
        self.assertTrue(any("@torch.compiler.disable" in line for line in w.lines))
        self.assertIsNone(pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=relu_fault).workaround)
        self.assertEqual(pt2diff.cli_flags(fixture("mlp.pt2"), compiled=relu_fault, workaround=True, workaround_max_compiles=5),
                         ["--compiled", relu_fault, "--workaround", "--workaround-max-compiles", "5"])

    def test_program_from_path(self):
        # Loaded from the same file, only the inputs' origin differs.
        r = pt2diff.diff(pt2diff.load(fixture("mlp.pt2")), mlp_inputs(), compiled=FAULT)
        expected = cli_json(fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--compiled", FAULT)
        self.assertEqual(r.graph, fixture("mlp.pt2"))
        self.assertEqual(without(json.loads(r.to_json()), [("inputs",)] + TIMING_FIELDS),
                         without(expected, [("inputs",)] + TIMING_FIELDS))

    def test_reports(self):
        r = pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=FAULT)
        self.assertIn("linear", r.to_text())
        html = r.to_html("pytest")
        self.assertTrue(html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>"))
        self.assertTrue(r.summary().startswith("output "))
        self.assertEqual(r.failure_message(), "pt2diff: the compiled graph does not agree with the reference\n" + r.summary())

    def test_sample_inputs(self):
        # None: the archive's sample inputs (torch.export.save keeps the example inputs).
        ep = torch.export.load(fixture("mlp.pt2"))
        r = pt2diff.diff(ep, None, compiled="eager")
        self.assertEqual(r.inputs, "sample inputs")
        self.assertEqual(r.verdict, "agree")


class InputsInMemory(unittest.TestCase):
    def test_layouts(self):
        # The layouts of an inputs file, as Python objects: each binds to the same graph inputs.
        x = mlp_inputs()[0]
        outputs = []
        for given in (x, (x,), [x], {"x": x}, ((x,), {}), ((), {"x": x})):
            r = pt2diff.diff(fixture("mlp.pt2"), given, compiled="eager", exploded=False)
            outputs.append(r.output_values()[0].eager)
        for out in outputs[1:]:
            self.assertTrue(torch.equal(out, outputs[0]))

    def test_output_values_are_pytorch_eager(self):
        # The engine's eager run of the graph is PyTorch's: the same ops on this machine, bit for bit.
        ep = torch.export.load(fixture("mlp.pt2"))
        x = mlp_inputs()[0]
        r = pt2diff.diff(ep, (x,), compiled="eager")
        name, compiled, eager, fp64 = r.output_values()[0]
        want = ep.module()(x)
        self.assertTrue(torch.equal(eager, want))
        self.assertTrue(torch.equal(compiled, want))
        self.assertEqual(fp64.dtype, torch.float64)
        self.assertLess((fp64 - want.double()).abs().max().item(), 1e-5)

    def test_tensors_requiring_grad(self):
        x = mlp_inputs()[0].clone().requires_grad_(True)
        r = pt2diff.diff(fixture("mlp.pt2"), (x,), compiled="eager", exploded=False)
        self.assertEqual(r.verdict, "agree")
        self.assertIsNone(x.grad)

    def test_module_exported_first(self):
        ep = torch.export.load(fixture("mlp.pt2"))
        module = ep.module()
        r = assert_agrees(module, mlp_inputs(), compiled="eager")
        self.assertEqual(r.graph, pt2diff.EXPORTED_PROGRAM_NAME)

    def test_module_writing_its_input(self):
        # A module that writes into its input: the input after the graph is a result, its values PyTorch eager's,
        # and a fault on the write is localized to it; the caller's tensor is left as it was.
        class Scatter(torch.nn.Module):
            def forward(self, x, idx, v):
                x.index_put_((idx,), v)
                x.add_(x.flip(0))
                return torch.tanh(x).sum(0)

        g = torch.Generator().manual_seed(5)
        x, idx, v = torch.randn(6, 8, generator=g), torch.tensor([0, 3]), torch.randn(2, 8, generator=g)
        given = x.clone()
        r = pt2diff.diff(Scatter(), (x, idx, v), compiled="fault:add_:scale=0.05")
        self.assertTrue(torch.equal(x, given))
        written = [o for o in r.outputs if o.get("value") == "x"]
        self.assertEqual([(o.name, o.role, o["pass"]) for o in written], [("input 'x' after the graph", "user_input_mutation of x", False)])
        self.assertEqual((r.localization.culprit.kind, r.localization.culprit.nodes), ("single_op", ["add_"]))
        want = given.clone()
        with torch.no_grad():
            Scatter()(want, idx, v)
        values = {name: eager for name, compiled, eager, fp64 in r.output_values()}
        self.assertTrue(torch.equal(values["input 'x' after the graph"], want))

    def test_as_strided_reads_the_whole_storage_of_a_slice(self):
        # pytorch#197431's program: as_strided over a slice of a tensor, with the base's strides, reads past the slice
        # but inside its storage. The engine's local run fed it the slice rounded alone (a storage of the slice's
        # elements) and failed ("out of bounds for storage of size 12"); it feeds the whole storage now.
        class AsStrided(torch.nn.Module):
            def forward(self, x):
                full = x * 2
                return torch.as_strided(full[:, ::2], (3, 2), full.stride())

        x = torch.randn(3, 2, generator=torch.Generator().manual_seed(1))
        r = pt2diff.diff(AsStrided(), (x,), compiled="eager", exploded=False)
        self.assertEqual(r.verdict, "agree")
        values = {name: eager for name, compiled, eager, fp64 in r.output_values()}
        self.assertTrue(torch.equal(values["as_strided"], AsStrided()(x)))

    def test_threads(self):
        # Calls from several threads run one at a time, each with its own result.
        results = {}

        def run(compiled):
            results[compiled] = pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled=compiled, exploded=False).verdict

        threads = [threading.Thread(target=run, args=(c,)) for c in ("eager", FAULT)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, {"eager": "agree", FAULT: "diverged"})


def archive_copies() -> set:
    """The workers' archive copies that exist now (exchange directories are in /dev/shm or $TMPDIR)."""
    bases = ["/dev/shm", tempfile.gettempdir()]
    return {p for base in bases for p in glob.glob(os.path.join(base, "pt2diff-*", "archive.pt2"))}


class TrainingStep(unittest.TestCase):
    """pt2diff.diff_training_step: one step (forward, loss, backward) of a module from memory (docs/training.md)."""

    def setUp(self):
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                                         torch.nn.Linear(16, 4)).train()
        self.x, self.y = torch.randn(6, 8), torch.randn(6, 4)

    def test_gradients_are_pytorch_backward(self):
        # The outputs are the loss and each parameter's gradient, by name, bit-identical to loss.backward(); the
        # module's weights and buffers are left as they were.
        before = {k: v.clone() for k, v in self.model.state_dict().items()}
        mse = torch.nn.functional.mse_loss
        r = pt2diff.diff_training_step(self.model, (self.x,), mse, targets=(self.y,), compiled="eager")
        self.assertEqual([o.name for o in r.outputs], ["loss", "0.weight.grad", "0.bias.grad", "1.weight.grad",
                                                       "1.bias.grad", "3.weight.grad", "3.bias.grad"])
        self.assertTrue(all(torch.equal(v, self.model.state_dict()[k]) for k, v in before.items()))
        values = {name: compiled for name, compiled, eager, fp64 in r.output_values()}
        loss = mse(self.model(self.x), self.y)
        loss.backward()
        self.assertTrue(torch.equal(values["loss"], loss.detach()))
        for k, p in self.model.named_parameters():
            self.assertTrue(torch.equal(values[k + ".grad"], p.grad), k)

    def test_backward_fault_is_named_in_the_backward(self):
        r = pt2diff.diff_training_step(self.model, (self.x,), torch.nn.functional.mse_loss, targets=(self.y,),
                                       compiled="fault:native_layer_norm_backward:scale=0.05", rule="relative")
        self.assertEqual((r.culprit.kind, r.culprit.nodes, r.culprit_phase),
                         ("single_op", ["native_layer_norm_backward"], "backward"))
        self.assertTrue(r.culprit.sources[0].startswith("gradient of native_layer_norm at "), r.culprit.sources[0])
        self.assertIn("0.weight.grad", [o.name for o in r.failing_outputs])
        r = pt2diff.diff_training_step(self.model, (self.x,), torch.nn.functional.mse_loss, targets=(self.y,),
                                       compiled="fault:gelu:scale=0.05", rule="relative")
        self.assertEqual((r.culprit.nodes, r.culprit_phase), (["gelu"], "forward"))

    def test_nonfinite_step_is_said(self):
        # A step whose own math gives Inf (a division by 0): one line naming the loss and the first node, and every
        # output still judged.
        class Divide(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 4)

            def forward(self, x):
                return self.fc(x) / 0.0

        r = pt2diff.diff_training_step(Divide().train(), (self.x,), lambda out: out.sum(), compiled="eager")
        self.assertRegex(r.eager_nonfinite, r"eager itself gives 1 NaN/Inf of 1 in loss; the first node whose eager value "
                                            r"is not finite: div \(aten.div.Tensor\)")
        self.assertEqual(len(r.outputs), 3)
        self.assertIn(r.eager_nonfinite, r.warnings)
        self.assertIsNone(pt2diff.diff_training_step(self.model, (self.x,), torch.nn.functional.mse_loss,
                                                     targets=(self.y,), compiled="eager").eager_nonfinite)

    def test_not_a_training_step(self):
        with self.assertRaisesRegex(Exception, "no parameter that requires grad"):
            pt2diff.diff_training_step(self.model.requires_grad_(False), (self.x,), torch.nn.functional.mse_loss,
                                       targets=(self.y,))
        self.model.requires_grad_(True)
        with self.assertRaisesRegex(Exception, "the loss must be a one-element tensor"):
            pt2diff.diff_training_step(self.model, (self.x,), compiled="eager")


class WorkerFromMemory(unittest.TestCase):
    def test_external_worker_reads_a_temporary_copy(self):
        # A worker in another process loads the archive from a path: a program from memory is handed a
        # copy, removed with the backend. (test_inductor.py does the same through Inductor.)
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python", "examples", "eager_worker.py")
        before = archive_copies()
        r = pt2diff.diff(torch.export.load(fixture("mlp.pt2")), mlp_inputs(), compiled=f"external:{sys.executable} {worker}")
        self.assertEqual([(c.what, c.ok) for c in r.compiles], [("graph", True), ("exploded", True)], r.to_text())
        self.assertEqual(r.verdict, "agree")
        self.assertEqual(archive_copies() - before, set(), "the worker's archive copy was left behind")


class ErrorsAsCli(unittest.TestCase):
    """Bad input: an exception of the right class whose str() is the line the CLI prints after 'pt2diff: '."""

    def cli_line(self, *args) -> str:
        p = cli(*args)
        self.assertEqual(p.returncode, 2, p.stderr)
        line = p.stderr.strip()
        self.assertTrue(line.startswith("pt2diff: ") and "\n" not in line, line)
        return line[len("pt2diff: "):]

    def test_bad_archive(self):
        for name in ("mlp_inputs.pt", "does_not_exist.pt2"):
            path = fixture(name)
            with self.assertRaises(pt2diff.BadArchiveError) as caught:
                pt2diff.load(path)
            self.assertEqual(str(caught.exception), self.cli_line(path, fixture("mlp_inputs.pt")))
            self.assertEqual((caught.exception.kind, caught.exception.exit_code), ("bad_archive", 2))
            self.assertIsInstance(caught.exception, pt2diff.Error)

    def test_bad_bytes(self):
        with open(fixture("mlp_inputs.pt"), "rb") as f:
            data = f.read()
        with self.assertRaises(pt2diff.BadArchiveError) as caught:
            pt2diff.load(data)
        # The same problem as the file's, named after the bytes instead of the path.
        self.assertEqual(str(caught.exception),
                         self.cli_line(fixture("mlp_inputs.pt"), fixture("mlp_inputs.pt")).replace(fixture("mlp_inputs.pt"), "<bytes>"))

    def test_bad_inputs(self):
        wrong = torch.randn(3, 5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "wrong.pt")
            torch.save((wrong,), path)
            expected = self.cli_line(fixture("mlp.pt2"), path)
        with self.assertRaises(pt2diff.BadInputsError) as caught:
            pt2diff.diff(fixture("mlp.pt2"), (wrong,), compiled="eager")
        self.assertEqual(str(caught.exception), expected)

    def test_bad_options(self):
        with self.assertRaises(pt2diff.UsageError) as caught:
            pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), compiled="nonsense")
        self.assertEqual(str(caught.exception), self.cli_line(fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--compiled", "nonsense"))
        with self.assertRaises(pt2diff.UsageError) as caught:
            pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), rule="ulp:x")
        self.assertEqual(str(caught.exception), self.cli_line(fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--rule", "ulp:x"))
        with self.assertRaisesRegex(TypeError, "unknown option 'tolerance'"):
            pt2diff.diff(fixture("mlp.pt2"), mlp_inputs(), tolerance=1e-3)

    def test_python_only_mistakes(self):
        with self.assertRaisesRegex(pt2diff.BadInputsError, r"input #0 is a list: nested containers are not graph inputs"):
            pt2diff.diff(fixture("mlp.pt2"), ([mlp_inputs()[0]],), compiled="eager")
        with self.assertRaisesRegex(pt2diff.BadInputsError, r"is a object: graph inputs are tensors"):
            pt2diff.diff(fixture("mlp.pt2"), (object(),), compiled="eager")
        with self.assertRaisesRegex(TypeError, "nn.Module needs inputs"):
            pt2diff.load(torch.nn.Linear(2, 2))

    def test_assert_agrees_on_an_error(self):
        with self.assertRaises(AssertionError) as caught:
            assert_agrees(fixture("does_not_exist.pt2"), mlp_inputs())
        self.assertEqual(str(caught.exception),
                         "pt2diff: " + self.cli_line(fixture("does_not_exist.pt2"), fixture("mlp_inputs.pt")))


class OtherCommands(unittest.TestCase):
    def test_sweep_matches_cli(self):
        r = pt2diff.sweep(torch.export.load(fixture("mlp.pt2")), mlp_inputs(), compiled=FAULT, tol="1e-6:1e-1:6",
                          multiplier=[2, 4])
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "sweep.json")
            cli("sweep", fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--compiled", FAULT, "--tol", "1e-6:1e-1:6",
                "--multiplier", "2,4", "--json", out, check_rc=(0,))
            with open(out) as f:
                expected = json.load(f)
        # As for diff: where the program and inputs came from, and the timings.
        fields = [("graph",), ("inputs",), ("run_seconds",), ("judge_seconds",), ("localize_seconds",)]
        got = json.loads(r.to_json())
        self.assertEqual((got["graph"], got["inputs"]), (pt2diff.EXPORTED_PROGRAM_NAME, pt2diff.PYTHON_INPUTS_NAME))
        self.assertEqual(without(got, fields), without(expected, fields))
        self.assertEqual(r.run.verdict, "diverged")
        self.assertIn("tol", r.to_text())
        self.assertTrue(r.to_csv().startswith("tol,"))
        self.assertTrue(r.to_svg().lstrip().startswith("<svg"))

    def test_explain_matches_cli(self):
        e = pt2diff.explain(fixture("mlp.pt2"), mlp_inputs(), node="linear", compiled=FAULT)
        p = cli("explain", fixture("mlp.pt2"), fixture("mlp_inputs.pt"), "--node", "linear", "--compiled", FAULT,
                check_rc=(0,))
        self.assertEqual(e.to_text(), p.stdout)
        self.assertTrue(e.hints)
        self.assertEqual([h.kind for h in e.hints], [h["kind"] for h in json.loads(e.to_json())])

    def test_cli_flags(self):
        self.assertEqual(pt2diff.cli_flags(fixture("mlp.pt2"), compiled=FAULT, tol=1e-5, exploded=False, bisect="linear"),
                         ["--compiled", FAULT, "--tol", "1e-05", "--no-exploded", "--bisect", "linear"])
        # A dict of Inductor settings is written as Python literals; sizes as the CLI reads them.
        self.assertEqual(pt2diff.cli_flags(fixture("mlp.pt2"), inductor_config={"emulate_precision_casts": True},
                                           max_memory="16G", matmul_precision="high", rule="ulp:4", repeats=3, seed=7),
                         ["--compiled", "inductor", "--inductor-config", "emulate_precision_casts=True", "--matmul-precision",
                          "high", "--seed", "7", "--rule", "ulp:4", "--repeats", "3", "--max-memory", "17179869184"])
        for bad, says in (({"matmul_precision": "low"}, "matmul_precision='low': expected 'highest', 'high' or 'medium'"),
                          ({"max_memory": "lots"}, "max_memory='lots' is not a size"),
                          ({"bisect": "ternary"}, "bisect='ternary': expected 'binary' or 'linear'"),
                          ({"repeats": 0}, "repeats=0: expected 1 to 100")):
            with self.assertRaises(pt2diff.UsageError) as caught:
                pt2diff.cli_flags(fixture("mlp.pt2"), **bad)
            self.assertTrue(str(caught.exception).startswith(says), str(caught.exception))



class NonFiniteNumbers(unittest.TestCase):
    """Every field the report's schema types as a number is a float in Python, "Infinity" and "NaN" included."""

    def test_the_schemas_numbers_are_floats_and_strings_stay_strings(self):
        from pt2diff import _results

        self.assertEqual(json.loads(pt2diff._pt2diff.report_schema())["properties"]["schema_version"], {"const": 1})
        # The node verdict's ratios: once missing from a hand-written list here, so "Infinity" stayed a string.
        self.assertLessEqual({"worst_ratio", "ratio", "roundoffs", "before", "after", "rmse", "error_ratio"}, _results._NUMERIC)
        doc = _results._decode('{"node_verdict": {"worst_ratio": "Infinity", "worst_node": "NaN", '
                               '"findings": [{"ratio": "NaN", "roundoffs": 2.5}]}}')
        self.assertEqual(doc["node_verdict"]["worst_ratio"], float("inf"))
        self.assertNotEqual(doc["node_verdict"]["findings"][0]["ratio"], doc["node_verdict"]["findings"][0]["ratio"])  # NaN
        self.assertEqual(doc["node_verdict"]["findings"][0]["roundoffs"], 2.5)
        self.assertEqual(doc["node_verdict"]["worst_node"], "NaN", "a node's name is text, whatever it reads")

if __name__ == "__main__":
    unittest.main()
