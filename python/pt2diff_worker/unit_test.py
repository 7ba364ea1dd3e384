"""A culprit window as a PyTorch unit test (`--repro DIR` writes DIR/test_repro.py): plain PyTorch, no pt2diff and no
.pt2, in the style of test/inductor/test_torchinductor.py (torch.testing._internal.common_utils.TestCase,
run_tests()). The window's ops are Python source (the exported window's FX code); its inputs are the small .pt beside
it (the values the localization fed the window). The test compiles the window with torch.compile(backend="inductor")
and judges it against eager with an fp64 reference, by the verdict's rule: it fails while the compiler bug is there
and passes without it. Also a pytest file.
"""
import re
import textwrap

import torch

# Names the FX code may use, and the line that brings each into the test file.
_IMPORTS = {
    "torch": "import torch",
    "device": "from torch import device",
    "inf": "inf = math.inf",
    "nan": "nan = math.nan",
    "NoneType": "NoneType = type(None)",
    "math": "import math",
    "operator": "import operator",
    "builtins": "import builtins",
    "fx_pytree": "import torch.fx._pytree as fx_pytree",
    "pytree": "import torch.utils._pytree as pytree",
}


def window_source(gm):
    """The forward of `gm` (an exported window's graph module) as the source of a method, and the import lines it
    needs; None when its code needs anything the file cannot import (a submodule, a custom object)."""
    code = gm.graph.python_code(root_module="self")
    used = {name for name in code.globals if re.search(rf"\b{re.escape(name)}\b", code.src)}
    if not used <= set(_IMPORTS):
        return None
    body = code.src.split("\n", code.src.count("\n"))
    if any("self." in line for line in body if not line.lstrip().startswith("def forward(")):
        return None  # a get_attr: the window reads a submodule or a constant of the archive
    lines = {"import math", "import torch"} | {_IMPORTS[n] for n in used}
    order = lambda text: (not text.startswith(("import", "from")), text)  # noqa: E731  (imports, then assignments)
    return code.src, sorted(lines, key=order)


_TEMPLATE = '''"""A failing PyTorch unit test written by pt2diff from its culprit: {summary}

From {graph} ({nodes}). The window's ops are the source below (exported with torch.export from the graph pt2diff
localized in); its inputs are {inputs_name} beside this file (the values the localization fed the window: fp64
reference values rounded to their dtypes, weights included). The test compiles the window with
torch.compile(backend="inductor") and judges the result against eager, with the window run in float64 as the
reference, by the rule pt2diff used ({rule}). It fails while the compiler bug is there and passes without it.

    python {test_name}                 # or: pytest {test_name}
"""
import os

{imports}
from torch._dynamo.utils import same
try:
    from torch.testing._internal.common_utils import TestCase, run_tests  # PyTorch's test layout (needs expecttest)
except ImportError:  # a torch without PyTorch's test requirements: the same test under unittest
    from unittest import TestCase
    from unittest import main as run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE = {device!r}  # where pt2diff exported the window; "cuda" needs a GPU
TOL = {tol!r}


class Repro(torch.nn.Module):
{forward}

def fp64(value):
    """A floating tensor in float64 (the reference); anything else as it is."""
    return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


class TestRepro(TestCase):
    def test_compiled_matches_eager(self):
        inputs = torch.load(os.path.join(HERE, {inputs_name!r}), weights_only=True)
        inputs = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in inputs]
        model = Repro()

        def fresh(cast=lambda x: x):
            # Each run on its own copy of the inputs: a window that writes into them must not see another run's writes.
            return [cast(x.clone()) if isinstance(x, torch.Tensor) else x for x in inputs]

        with torch.no_grad():
            eager = model(*fresh())
            reference = model(*fresh(fp64))
            torch._dynamo.reset()
            compiled = torch.compile(model, backend="inductor", fullgraph=True, dynamic=False)(*fresh())
{judge}


if __name__ == "__main__":
    run_tests()
'''

_JUDGE_SAME = '''        # torch._dynamo.utils.same, as the accuracy minifier judges: compiled against eager, fp64 as the referee.
        self.assertTrue(same(eager, compiled, fp64_ref=reference, tol=TOL, equal_nan=True),
                        "torch.compile's result of the window does not agree with eager (fp64 as the referee)")'''

_JUDGE_ALLCLOSE = '''        # allclose to the fp64 reference at atol = rtol = TOL, every floating output.
        for got, want in zip(compiled, reference):
            if isinstance(got, torch.Tensor) and got.is_floating_point():
                torch.testing.assert_close(got.double(), want, atol=TOL, rtol=TOL, equal_nan=True)'''


def write(gm, path, *, inputs_name, graph, nodes, summary, rule, tol, device):
    """Writes the test for the exported window `gm` to `path`; returns None, or why it could not (one line)."""
    found = window_source(gm)
    if found is None:
        return "the window's code reads something a standalone file cannot import (a submodule or an archive constant)"
    src, imports = found
    forward = textwrap.indent(textwrap.dedent(src).strip("\n"), "    ")
    judge = _JUDGE_ALLCLOSE if rule == "allclose" else _JUDGE_SAME
    rule_text = rule if rule in ("same", "allclose") else f"same (pt2diff's rule was {rule}; the test uses same())"
    text = _TEMPLATE.format(summary=" ".join(summary.split()), graph=graph, nodes=nodes, inputs_name=inputs_name,
                            rule=rule_text, test_name=path.rsplit("/", 1)[-1], imports="\n".join(imports), device=device,
                            tol=tol, forward=forward, judge=judge)
    compile(text, path, "exec")  # a file that does not parse is a bug here, not a test
    with open(path, "w") as f:
        f.write(text)
    return None
