"""PyTorch eager (or fp64 reference) outputs of fixtures, computed on this machine at test time.

ATen and oneDNN pick kernels by CPU features and split reductions by thread count, so eager outputs
stored on one machine are not bit-for-bit what eager gives on another. The bit-exactness tests
(tests/test_support.cpp: testing::eager_outputs) compare pt2diff's native run against what this script
writes, run by the venv's Python with the test process's thread count and CPU capability.

    python tests/eager_reference.py --out DIR --threads N --capability CAP [--library SO] [--fp64] FIXTURES NAME...

For every NAME it loads FIXTURES/NAME.pt2 (torch.export.load) and FIXTURES/BASE_inputs.pt
(torch.load, weights_only=True; BASE is NAME without "_core"), seeds torch with 1234 (as
make_fixtures.py did, for dropout) and writes the tuple of outputs of `ep.module()` to DIR/NAME.pt
(a NAME in a folder, torch-2.12/toy, is written flat: DIR/torch-2.12+toy.pt), and beside it DIR/NAME.after.pt,
a dict of each user input (by placeholder name) and buffer (by its name in the module) after the call: what the
graph wrote in place.
With --fp64 it writes the fp64 reference instead (fixtures/reference.py, what make_fixtures.py stores as
NAME_fp64_expected.pt): for graphs whose fp64 result depends on the machine, as dropout's mask does.
Exits 2 with one line when this Python's CPU capability is not CAP (the C++ test process and this
script must pick the same kernels) or a fixture cannot be run.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))


def call_args(ep, inputs):
    """(args, kwargs) for ep.module() from an inputs file: a tuple/list of positional inputs, or a dict
    naming positional inputs first and keyword inputs by their names (make_fixtures.py's layout)."""
    if isinstance(inputs, dict):
        _, example_kwargs = ep.example_inputs
        kwargs = {k: inputs[k] for k in example_kwargs}
        return [v for k, v in inputs.items() if k not in kwargs], kwargs
    if isinstance(inputs, (tuple, list)):
        return list(inputs), {}
    return [inputs], {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--capability", required=True, help="the C++ test process's ATen CPU capability")
    parser.add_argument("--library", action="append", default=[], help="a TORCH_LIBRARY to load first")
    parser.add_argument("--fp64", action="store_true", help="the fp64 reference instead of eager")
    parser.add_argument("fixtures")
    parser.add_argument("names", nargs="+")
    a = parser.parse_args()

    import torch
    from reference import SEED, fp64_reference

    mine = torch.backends.cpu.get_cpu_capability()
    if mine.lower() != a.capability.lower():
        print(f"eager_reference: Python's ATen CPU capability is {mine}, the test process's is {a.capability}: "
              "run both with the same ATEN_CPU_CAPABILITY", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    for lib in a.library:
        torch.ops.load_library(lib)
    os.makedirs(a.out, exist_ok=True)
    for name in a.names:
        base = name[: name.rfind("_core")] if "_core" in name else name
        try:
            ep = torch.export.load(os.path.join(a.fixtures, name + ".pt2"))
            inputs = torch.load(os.path.join(a.fixtures, base + "_inputs.pt"), weights_only=True)
            args, kwargs = call_args(ep, inputs)
            if a.fp64:
                out = fp64_reference(ep, args, kwargs)
            else:
                module = ep.module()
                with torch.no_grad():
                    torch.manual_seed(SEED)
                    out = module(*args, **kwargs)
                # What the call wrote in place: each user input and buffer after it (NAME.after.pt, by name).
                after = dict(zip(ep.graph_signature.user_inputs, args))
                after.update({k: v for k, v in module.named_buffers()})
                after = {k: v.detach() for k, v in after.items() if isinstance(v, torch.Tensor)}
        except Exception as e:  # one line per fixture, as the C++ side reports it
            print(f"eager_reference: {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            return 2
        if not isinstance(out, tuple):
            out = (out,)
        flat = name.replace("/", "+")
        tmp = os.path.join(a.out, f".{flat}.{os.getpid()}.tmp")
        if not a.fp64:
            torch.save(after, tmp)
            os.replace(tmp, os.path.join(a.out, flat + ".after.pt"))
        torch.save(tuple(t.detach() for t in out), tmp)
        os.replace(tmp, os.path.join(a.out, flat + ".pt"))  # atomic: a parallel test never reads half a file
    return 0


if __name__ == "__main__":
    sys.exit(main())
