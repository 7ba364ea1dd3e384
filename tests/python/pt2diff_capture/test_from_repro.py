"""`python -m pt2diff_capture from-repro` turns the accuracy minifier's repro.py into an archive and
inputs pt2diff runs. A ctest, label capture (tests/cli_case.py says how to run it alone).

On fixtures/minifier/repro.py (written by PyTorch's own after-AOT accuracy checker,
fixtures/make_minifier_repro.py): the inputs are the stored ones, found in checkpoints/ next to the
repro although the save_dir it names is gone; prims ops become ATen; pt2diff runs the archive (exit 0,
AGREE) and its eager outputs are the Repro module's on the stored inputs, bit for bit; the command it
prints carries the repro's Inductor setting. Also: --save-dir, a repro without its storages (random
inputs, said so), the repro's __main__ block never runs, Inductor config restored after from_repro().
"""
import contextlib
import importlib.util
import io
import os
import shutil
import sys
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import FIXTURES, CliTestCase  # noqa: E402
from capture_support import capture_cli, last_line, pt2diff_eager  # noqa: E402

import pt2diff_capture  # noqa: E402
import pt2diff_capture.__main__  # noqa: E402
import torch  # noqa: E402
from torch._dynamo.debug_utils import InputReader  # noqa: E402

REPRO = os.path.join(FIXTURES, "minifier", "repro.py")
STORE = os.path.join(FIXTURES, "minifier", "checkpoints")


def repro_reference():
    """The Repro module's outputs on the stored inputs, computed here (the module code is ours to trust)."""
    spec = importlib.util.spec_from_file_location("fixture_repro", REPRO)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reader = InputReader(save_dir=STORE)
    module.load_args(reader)
    with torch.no_grad():
        return reader.args, module.mod(*reader.args)


def in_process(*args):
    """The CLI's main() in this process (saves a torch import per case): (exit code, stdout)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = pt2diff_capture.__main__.main(list(args))
    return code, out.getvalue()


class FromRepro(CliTestCase):
    """The fixture's repro converted by the command, as a user runs it; its archive run by pt2diff."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        out = os.path.join(cls.tmp, "out")
        cls.convert = capture_cli("from-repro", REPRO, "--out", out)
        cls.lines = cls.convert.stdout.splitlines()
        cls.archive, cls.inputs = os.path.join(out, "repro.pt2"), os.path.join(out, "repro_inputs.pt")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.export.load's deprecation chatter
            cls.ops = [str(n.target) for n in torch.export.load(cls.archive).graph.nodes if n.op == "call_function"]
        cls.addClassCleanup(shutil.rmtree, os.path.join(FIXTURES, "minifier", "__pycache__"), True)  # repro_reference()'s
        cls.args, cls.expected = repro_reference()
        cls.saved = torch.load(cls.inputs, weights_only=True)
        cls.pt2diff, cls.eager = pt2diff_eager(cls.cli, cls.archive, cls.inputs, os.path.join(cls.tmp, "outputs.pt"))

    def test_exits_0(self):
        """from-repro exits 0 and prints 4 lines."""
        self.assertTrue(self.convert.returncode == 0 and len(self.lines) == 4,
                        f"from-repro exits 0: {self.convert.stderr.strip() or 'ok'} (printed: {self.lines})")

    def test_stored_inputs_read_next_to_the_repro(self):
        self.assertTrue(bool(self.lines) and "storages: all 7 read from" in self.lines[0]
                        and "next to the repro" in self.lines[0],
                        "the 7 stored inputs were read from checkpoints/ next to the repro")

    def test_printed_command_carries_the_inductor_setting(self):
        self.assertEqual(last_line(self.convert.stdout),
                         f"run: pt2diff {self.archive} {self.inputs} "
                         "--inductor-config \"cpp.inject_relu_bug_TESTING_ONLY='accuracy'\"",
                         "the printed command carries the repro's Inductor setting")

    def test_prims_became_aten(self):
        self.assertTrue(not any(op.startswith("prims.") for op in self.ops) and "aten._to_copy.default" in self.ops,
                        "prims.convert_element_type became aten._to_copy")

    def test_inputs_file_holds_the_stored_inputs(self):
        self.assertTrue(len(self.saved) == len(self.args) and all(torch.equal(a, b) for a, b in zip(self.saved, self.args)),
                        "the inputs file holds the stored inputs exactly")

    def test_pt2diff_agrees(self):
        run = self.pt2diff
        self.assertTrue(run.returncode == 0 and last_line(run.stdout).startswith("AGREE (19 nodes"),
                        f"pt2diff --compiled eager: exit {run.returncode}, {last_line(run.stdout or run.stderr)}")

    def test_eager_outputs_are_the_repro_modules(self):
        eager, expected = self.eager, self.expected
        self.assertTrue(eager is not None and len(eager) == len(expected)
                        and all(torch.equal(a, b) for a, b in zip(eager, expected)),
                        "pt2diff's eager outputs are the Repro module's, bit for bit")


class SaveDir(CliTestCase):
    def test_save_dir_names_the_store(self):
        code, stdout = in_process("from-repro", REPRO, "--out", os.path.join(self.tmp, "explicit"), "--save-dir", STORE)
        self.assertTrue(code == 0 and "all 7 read from" in stdout and "(--save-dir)" in stdout, "--save-dir names the store")


class WithoutStorages(CliTestCase):
    """The repro alone in a directory, with a __main__ block that would leave a mark: random inputs, said so."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = cls.tmp
        alone = cls.alone = os.path.join(tmp, "alone")
        os.makedirs(alone)
        cls.mark = os.path.join(tmp, "main_ran")
        with open(REPRO) as f:
            text = f.read()
        with open(os.path.join(alone, "repro.py"), "w") as f:
            f.write(text.replace("if __name__ == '__main__':",
                                 f"if __name__ == '__main__':\n    open({cls.mark!r}, 'w').close()"))
        cls.code, cls.stdout = in_process("from-repro", os.path.join(alone, "repro.py"), "--out", os.path.join(tmp, "random"))
        cls.pt2diff, _ = pt2diff_eager(cls.cli, os.path.join(tmp, "random", "repro.pt2"),
                                       os.path.join(tmp, "random", "repro_inputs.pt"), os.path.join(tmp, "random_outputs.pt"))

    def test_random_inputs_said_so(self):
        code, stdout = self.code, self.stdout
        self.assertTrue(code == 0 and "storages: all 7 generated at random" in stdout
                        and "note: random inputs may not show the divergence" in stdout,
                        f"without its storages: random inputs, and it says so ({stdout.splitlines()[0] if stdout else code})")

    def test_pt2diff_runs_it(self):
        self.assertEqual(self.pt2diff.returncode, 0, "pt2diff runs the random-input conversion")

    def test_main_block_did_not_run(self):
        self.assertFalse(os.path.exists(self.mark), "the repro's __main__ block did not run")

    def test_no_pycache_left(self):
        self.assertFalse(os.path.exists(os.path.join(self.alone, "__pycache__")), "no __pycache__ left next to the repro")


class InProcess(CliTestCase):
    def test_inductor_config_restored(self):
        """from_repro() in-process: Inductor config restored, the setting reported, 7 of 7 stored inputs."""
        before = torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY
        converted = pt2diff_capture.from_repro(REPRO, os.path.join(self.tmp, "inproc"))
        self.assertTrue(torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY == before
                        and converted.inductor_config == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
                        and converted.loaded == converted.storages == 7,
                        "from_repro() in-process: Inductor config restored, the setting reported, 7 of 7 stored inputs")


if __name__ == "__main__":
    unittest.main()
