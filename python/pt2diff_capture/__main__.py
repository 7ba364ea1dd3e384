"""python -m pt2diff_capture from-repro REPRO.py --out DIR | export --module MOD:FACTORY --out NAME
                        | train --module MOD:FACTORY --out NAME | list DIR"""
import argparse
import importlib
import json
import logging
import os
import re
import sys
import warnings

import torch

from .normalize import CaptureError, one_line


def _short(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def from_repro_cmd(a):
    from .minifier import from_repro
    c = from_repro(a.repro, a.out, save_dir=a.save_dir, core_aten=a.core_aten)
    e = c.exported
    store = c.store and _short(c.store)
    if c.store is None:
        source = f"all {c.storages} generated at random ({c.store_note})"
    elif c.loaded < c.storages:
        source = (f"{c.loaded} of {c.storages} read from {store} ({c.store_note}), "
                  f"{c.storages - c.loaded} generated at random (not in {store}/storages)")
    else:
        source = f"all {c.storages} read from {store} ({c.store_note})"
    print(f"{a.repro}: {len(e.input_specs)} inputs; storages: {source}")
    print(f"wrote {e.archive} ({e.ops} ops) and {e.inputs}")
    if c.inductor_config:
        print("the repro sets Inductor config: " + ", ".join(f"{k}={v!r}" for k, v in c.inductor_config.items()))
    if c.loaded < c.storages:
        print("note: random inputs may not show the divergence the minifier saw")
    print(f"run: {c.command}")


def _made(spec, shapes):
    """What the factory MODULE:FACTORY returns, checked to be a tuple of one of `shapes` (its lengths)."""
    module_name, _, factory_name = spec.partition(":")
    if not factory_name:
        raise CaptureError(f"--module {spec}: expected MODULE:FACTORY (e.g. mymodels.bert:make)")
    sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(module_name), factory_name)
        made = factory()
    except Exception as e:  # noqa: BLE001 - the user's code: say what failed, in one line
        raise CaptureError(f"--module {spec}: {one_line(e)}") from e
    if not (isinstance(made, tuple) and len(made) in shapes):
        raise CaptureError(f"--module {spec}: the factory must return {' or '.join(shapes.values())}")
    return made


def _wrote(e):
    n = len(e.input_specs)
    print(f"wrote {e.archive} ({e.ops} ops) and {e.inputs} ({n} input{'s' if n != 1 else ''})")
    print(f"run: {e.command}")


def export_cmd(a):
    from .export import export_module
    made = _made(a.module, {2: "(module, args)", 3: "(module, args, kwargs)"})
    _wrote(export_module(*made, out=a.out, core_aten=a.core_aten))


def train_cmd(a):
    from .training import export_training_step
    made = _made(a.module, {3: "(module, args, loss_fn)", 4: "(module, args, loss_fn, targets)"})
    module, args, loss_fn, targets = (*made, ())[:4]
    module.train()
    _wrote(export_training_step(module, args, loss_fn, targets=targets, out=a.out))


def list_cmd(a):
    ranks = sorted((d for d in os.listdir(a.dir) if re.fullmatch(r"rank_\d+", d)), key=lambda d: int(d[5:])) \
        if os.path.isdir(a.dir) and not os.path.isfile(os.path.join(a.dir, "index.json")) else []
    if ranks:  # a capture under a process group: one folder per rank
        for d in ranks:
            print(f"{d}:")
            list_cmd(argparse.Namespace(dir=os.path.join(a.dir, d)))
        return
    path = os.path.join(a.dir, "index.json")
    if not os.path.isfile(path):
        raise CaptureError(f"{path}: no such file: capture into {a.dir} first "
                           f"(torch.compile(model, backend=pt2diff_capture.capture_backend({a.dir!r})))")
    try:
        with open(path) as f:
            graphs = json.load(f)["graphs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CaptureError(f"{path}: not a capture index ({one_line(e)})") from e
    for g in graphs:
        name = f"graph_{g['id']:03d}"
        if g.get("status") == "ok":
            cmd = f"pt2diff {os.path.join(a.dir, g['archive'])} {os.path.join(a.dir, g['inputs'])}"
            print(f"{name}  {g['ops']:4d} ops  {g.get('where')}\n           {cmd}")
        else:
            print(f"{name}  {g.get('status')}  {g.get('where')}: {g.get('error') or 'never called'}")


def ranks_cmd(a):
    """SCRIPT on N processes of one process group, as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT set;
    the script calls torch.distributed.init_process_group("gloo")), one thread each: a capture backend in the script
    writes OUT/rank_R per rank. Returns the worst exit status of the ranks."""
    import subprocess
    if a.nproc < 1:
        raise CaptureError(f"--nproc {a.nproc}: at least 1 rank")
    if not os.path.isfile(a.script):
        raise CaptureError(f"{a.script}: no such script")
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={a.nproc}", a.script, *a.args]
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        raise CaptureError(f"{a.script} on {a.nproc} ranks exited with status {rc} (the ranks' own messages are above)")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pt2diff_capture", description="Archives and inputs for pt2diff.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("from-repro", help="convert the accuracy minifier's repro.py")
    r.add_argument("repro")
    r.add_argument("--out", required=True, help="directory for REPRO.pt2 and REPRO_inputs.pt")
    r.add_argument("--save-dir", help="the minifier's checkpoints directory (holds storages/); found by default")
    r.add_argument("--core-aten", action="store_true", help="save after run_decompositions()")
    r.set_defaults(run=from_repro_cmd)
    e = sub.add_parser("export", help="torch.export a module a factory function makes")
    e.add_argument("--module", required=True, help="MODULE:FACTORY; FACTORY() returns (module, args[, kwargs])")
    e.add_argument("--out", default="model", help="writes OUT.pt2 and OUT_inputs.pt (default: model)")
    e.add_argument("--core-aten", action="store_true", help="save after run_decompositions()")
    e.set_defaults(run=export_cmd)
    t = sub.add_parser("train", help="one training step (forward, loss, backward) of a module a factory makes")
    t.add_argument("--module", required=True,
                   help="MODULE:FACTORY; FACTORY() returns (module, args, loss_fn[, targets]); the module runs in train mode")
    t.add_argument("--out", default="step", help="writes OUT.pt2 and OUT_inputs.pt (default: step)")
    t.set_defaults(run=train_cmd)
    ls = sub.add_parser("list", help="the graphs a capture backend wrote, with their pt2diff commands")
    ls.add_argument("dir")
    ls.set_defaults(run=list_cmd)
    rk = sub.add_parser("ranks", help="run a script on N gloo ranks of one process group on this machine (CPU)")
    rk.add_argument("--nproc", type=int, default=2, help="ranks (processes), default 2")
    rk.add_argument("script", help="a Python script that calls torch.distributed.init_process_group('gloo')")
    rk.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    rk.set_defaults(run=ranks_cmd)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")  # torch's deprecation chatter and log lines: our lines say what happened
    torch._logging.set_logs(all=logging.CRITICAL)
    try:
        a.run(a)
    except (CaptureError, OSError) as err:
        print(f"pt2diff_capture: {err if isinstance(err, CaptureError) else one_line(err)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
