"""Bad input to `python -m pt2diff_capture`: one line on stderr naming the file and the problem, exit 2. A ctest,
label capture (tests/cli_case.py says how to run it alone).

The first two cases run the command as a user would; the others call its main() in this process
(the same code, without a torch import per case).
"""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from capture_support import capture_cli  # noqa: E402

import pt2diff_capture.__main__  # noqa: E402

REPRO_HEAD = "import torch\nclass Repro(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
CASES = {
    # file name: (its text, the phrase its one error line must hold)
    "syntax.py": ("def load_args(reader):\n    reader.tensor(\n", "syntax.py: not a Python file (SyntaxError: "),
    "raises.py": ("1 / 0\ndef load_args(reader):\n    pass\n",
                  "raises.py: executing its module code failed: ZeroDivisionError: division by zero"),
    "bad_args.py": (REPRO_HEAD + "mod = Repro()\ndef load_args(reader):\n    raise ValueError('storage 1234 is gone')\n",
                    "bad_args.py: load_args(reader) failed: ValueError: storage 1234 is gone"),
    "no_module.py": ("def load_args(reader):\n    pass\n", "no_module.py: defines no `mod` module and no Repro class"),
    "data_dependent.py": (textwrap.dedent("""
        import torch
        class Repro(torch.nn.Module):
            def forward(self, x):
                return x * 2 if x.sum() > 0 else x
        mod = Repro()
        def load_args(reader):
            buf0 = reader.storage(None, 16)
            reader.tensor(buf0, (4,), is_leaf=True)
        """), "data_dependent.py: torch.export failed: "),
}


STEPS = textwrap.dedent("""
    import torch
    class Branches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)
        def forward(self, x):
            h = self.fc(x)
            return h * 2 if h.sum() > 0 else h
    def two():
        return torch.nn.Linear(2, 2), (torch.randn(3, 2),)
    def vector_loss():
        return torch.nn.Linear(2, 2), (torch.randn(3, 2),), lambda out: out
    def frozen():
        return torch.nn.Linear(2, 2).requires_grad_(False), (torch.randn(3, 2),), lambda out: out.sum()
    def branches():
        return Branches(), (torch.randn(3, 2),), lambda out: out.sum()
    """)


def one_line_error(code, stdout, stderr, phrase):
    lines = [line for line in stderr.splitlines() if line.strip()]
    return code == 2 and not stdout.strip() and len(lines) == 1 and lines[0].startswith("pt2diff_capture: ") \
        and phrase in lines[0]


def in_process(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = pt2diff_capture.__main__.main(list(args))
    return code, out.getvalue(), err.getvalue()


# A training step (`train`): a factory of the wrong shape, a loss that is no scalar, a frozen model, a step that
# branches on a tensor's value.
TRAIN_CASES = {"two": "the factory must return (module, args, loss_fn) or (module, args, loss_fn, targets)",
               "vector_loss": "the loss must be a one-element tensor that depends on the parameters, not a "
                              "tensor of shape [3, 2]",
               "frozen": "the module has no parameter that requires grad",
               "branches": "the step branches on a tensor's value, which a trace cannot follow"}


class BadInput(unittest.TestCase):
    """Every bad input given to the command, in setUpClass (each result: exit code, stdout, stderr); each test checks
    that one of them is one line and exit 2."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = cls.tmp = tempfile.mkdtemp(prefix="pt2diff-test-")
        cls.addClassCleanup(shutil.rmtree, tmp, True)
        out = cls.out = os.path.join(tmp, "out")
        cls.missing = os.path.join(tmp, "nope.py")
        cls.missing_run = capture_cli("from-repro", cls.missing, "--out", out)

        no_load_args = os.path.join(tmp, "no_load_args.py")
        with open(no_load_args, "w") as f:
            f.write(REPRO_HEAD + "mod = Repro()\n")
        cls.no_load_args_run = capture_cli("from-repro", no_load_args, "--out", out)

        cls.repros = {}
        for name, (text, _) in CASES.items():
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            cls.repros[name] = in_process("from-repro", path, "--out", out)

        cls.save_dir = in_process("from-repro", os.path.join(tmp, "data_dependent.py"), "--out", out, "--save-dir", tmp)
        cls.list_run = in_process("list", tmp)
        cls.export_run = in_process("export", "--module", "tiny_models")
        # One line each, nothing written.
        with open(os.path.join(tmp, "steps.py"), "w") as f:
            f.write(STEPS)
        sys.path.insert(0, tmp)
        try:
            cls.train_runs = {factory: in_process("train", "--module", f"steps:{factory}", "--out", out)
                              for factory in TRAIN_CASES}
        finally:
            sys.path.remove(tmp)

    def test_missing_file(self):
        run = self.missing_run
        self.assertTrue(one_line_error(run.returncode, run.stdout, run.stderr, f"pt2diff_capture: {self.missing}: no such file"),
                        f"missing file (exit {run.returncode}): {run.stderr.strip()}")

    def test_repro_without_load_args(self):
        run = self.no_load_args_run
        self.assertTrue(one_line_error(run.returncode, run.stdout, run.stderr, "no_load_args.py: no load_args(reader) function: "
                                       "not a repro written by torch's accuracy minifier"),
                        f"a repro without load_args (exit {run.returncode}): {run.stderr.strip()}")

    def test_bad_repros(self):
        """A syntax error, module code that raises, load_args that raises, no module, a data-dependent branch."""
        for name, (_, phrase) in CASES.items():
            with self.subTest(name):
                code, stdout, stderr = self.repros[name]
                self.assertTrue(one_line_error(code, stdout, stderr, phrase), f"{name} (exit {code}): {stderr.strip()}")

    def test_save_dir_without_storages(self):
        code, stdout, stderr = self.save_dir
        self.assertTrue(one_line_error(code, stdout, stderr, f"{self.tmp}: no storages/ directory in it"),
                        f"--save-dir without storages/ (exit {code}): {stderr.strip()}")

    def test_list_without_an_index(self):
        code, stdout, stderr = self.list_run
        self.assertTrue(one_line_error(code, stdout, stderr, "index.json: no such file: capture into"),
                        f"list without an index (exit {code}): {stderr.strip()}")

    def test_export_module_without_a_factory(self):
        code, stdout, stderr = self.export_run
        self.assertTrue(one_line_error(code, stdout, stderr, "expected MODULE:FACTORY"),
                        f"export --module without a factory (exit {code}): {stderr.strip()}")

    def test_bad_training_steps(self):
        """A factory of the wrong shape, a loss that is no scalar, a frozen model, a step that branches on a value."""
        for factory, phrase in TRAIN_CASES.items():
            with self.subTest(factory):
                code, stdout, stderr = self.train_runs[factory]
                self.assertTrue(one_line_error(code, stdout, stderr, phrase),
                                f"train --module steps:{factory} (exit {code}): {stderr.strip()}")

    def test_nothing_written(self):
        self.assertTrue(not os.path.exists(self.out) and not os.path.exists(self.out + ".pt2"), "nothing was written")


if __name__ == "__main__":
    unittest.main()
