#!/usr/bin/env python3
"""`python -m pt2diff_capture from-repro` turns the accuracy minifier's repro.py into an archive and
inputs pt2diff runs (run by ctest).

    from_repro.py PT2DIFF

On fixtures/minifier/repro.py (written by PyTorch's own after-AOT accuracy checker,
fixtures/make_minifier_repro.py): the inputs are the stored ones, found in checkpoints/ next to the
repro although the save_dir it names is gone; prims ops become ATen; pt2diff runs the archive (exit 0,
AGREE) and its eager outputs are the Repro module's on the stored inputs, bit for bit; the command it
prints carries the repro's Inductor setting. Also: --save-dir, a repro without its storages (random
inputs, said so), the repro's __main__ block never runs, Inductor config restored after from_repro().
"""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import warnings

from support import FIXTURES, Checks, capture_cli, last_line, pt2diff_eager

import pt2diff_capture
import pt2diff_capture.__main__
import torch
from torch._dynamo.debug_utils import InputReader

REPRO = os.path.join(FIXTURES, "minifier", "repro.py")
STORE = os.path.join(FIXTURES, "minifier", "checkpoints")


def repro_reference():
    """The Repro module's outputs on the stored inputs, computed here (the module code is ours to trust)."""
    import importlib.util
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


def main():
    pt2diff = sys.argv[1]
    warnings.simplefilter("ignore")
    c = Checks("from-repro")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cli = capture_cli("from-repro", REPRO, "--out", out)
        lines = cli.stdout.splitlines()
        c.check(cli.returncode == 0 and len(lines) == 4, f"from-repro exits 0: {cli.stderr.strip() or 'ok'}")
        print("\n".join("    " + line for line in lines))
        c.check(bool(lines) and "storages: all 7 read from" in lines[0] and "next to the repro" in lines[0],
                "the 7 stored inputs were read from checkpoints/ next to the repro")
        archive, inputs = os.path.join(out, "repro.pt2"), os.path.join(out, "repro_inputs.pt")
        c.check(last_line(cli.stdout) == f"run: pt2diff {archive} {inputs} --inductor-config \"cpp.inject_relu_bug_TESTING_ONLY='accuracy'\"",
                "the printed command carries the repro's Inductor setting")
        ops = [str(n.target) for n in torch.export.load(archive).graph.nodes if n.op == "call_function"]
        c.check(not any(op.startswith("prims.") for op in ops) and "aten._to_copy.default" in ops,
                "prims.convert_element_type became aten._to_copy")

        args, expected = repro_reference()
        saved = torch.load(inputs, weights_only=True)
        c.check(len(saved) == len(args) and all(torch.equal(a, b) for a, b in zip(saved, args)),
                "the inputs file holds the stored inputs exactly")
        run, eager = pt2diff_eager(pt2diff, archive, inputs, os.path.join(tmp, "outputs.pt"))
        c.check(run.returncode == 0 and last_line(run.stdout).startswith("AGREE (19 nodes"),
                f"pt2diff --compiled eager: exit {run.returncode}, {last_line(run.stdout or run.stderr)}")
        c.check(eager is not None and len(eager) == len(expected) and all(torch.equal(a, b) for a, b in zip(eager, expected)),
                "pt2diff's eager outputs are the Repro module's, bit for bit")

        code, stdout = in_process("from-repro", REPRO, "--out", os.path.join(tmp, "explicit"), "--save-dir", STORE)
        c.check(code == 0 and "all 7 read from" in stdout and "(--save-dir)" in stdout, "--save-dir names the store")

        # Alone in a directory, with a __main__ block that would leave a mark: random inputs, said so.
        alone = os.path.join(tmp, "alone")
        os.makedirs(alone)
        mark = os.path.join(tmp, "main_ran")
        with open(REPRO) as f:
            text = f.read()
        with open(os.path.join(alone, "repro.py"), "w") as f:
            f.write(text.replace("if __name__ == '__main__':", f"if __name__ == '__main__':\n    open({mark!r}, 'w').close()"))
        code, stdout = in_process("from-repro", os.path.join(alone, "repro.py"), "--out", os.path.join(tmp, "random"))
        c.check(code == 0 and "storages: all 7 generated at random" in stdout
                and "note: random inputs may not show the divergence" in stdout,
                f"without its storages: random inputs, and it says so ({stdout.splitlines()[0] if stdout else code})")
        run, _ = pt2diff_eager(pt2diff, os.path.join(tmp, "random", "repro.pt2"), os.path.join(tmp, "random", "repro_inputs.pt"),
                               os.path.join(tmp, "random_outputs.pt"))
        c.check(run.returncode == 0, "pt2diff runs the random-input conversion")
        c.check(not os.path.exists(mark), "the repro's __main__ block did not run")
        c.check(not os.path.exists(os.path.join(alone, "__pycache__")), "no __pycache__ left next to the repro")

        before = torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY
        converted = pt2diff_capture.from_repro(REPRO, os.path.join(tmp, "inproc"))
        c.check(torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY == before
                and converted.inductor_config == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
                and converted.loaded == converted.storages == 7,
                "from_repro() in-process: Inductor config restored, the setting reported, 7 of 7 stored inputs")
    shutil.rmtree(os.path.join(FIXTURES, "minifier", "__pycache__"), ignore_errors=True)  # repro_reference()'s
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
