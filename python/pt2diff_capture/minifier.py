"""The accuracy minifier's repro.py (torch._dynamo.repro.after_aot / after_dynamo) as archive + inputs.

A repro defines `class Repro(nn.Module)`, `mod = Repro()` and `load_args(reader)`, which asks the reader
for each input's storage (by content hash, in SAVE_DIR/storages/) and view. We execute the module code
under our own module name, so its `if __name__ == '__main__':` block (run_repro) never runs, and read
the storages with torch's content-store reader, which loads each one with torch.load(weights_only=True).
"""
import ast
import dataclasses
import functools
import importlib.util
import logging
import os
import shlex
import sys
import warnings

import torch
from torch._dynamo.debug_utils import InputReader

from .export import export_program, write_archive, write_inputs
from .normalize import CaptureError, describe, one_line


@dataclasses.dataclass
class Converted:
    exported: object      # the Exported written (archive, inputs, ops, input_specs)
    storages: int         # storages load_args asked for
    loaded: int           # of which read from the store; the others are random data
    store: str | None     # the SAVE_DIR read, None when there is none (all inputs random)
    store_note: str       # how the store was found
    inductor_config: dict  # Inductor settings the repro makes (key -> value), to pass to pt2diff

    @property
    def command(self):
        cmd = f"pt2diff {self.exported.archive} {self.exported.inputs}"
        for key, value in self.inductor_config.items():
            setting = f"{key}={value!r}"
            quoted = f'"{setting}"' if not set('"$`\\') & set(setting) else shlex.quote(setting)
            cmd += f" --inductor-config {quoted}"
        return cmd


def from_repro(repro, out_dir, save_dir=None, core_aten=False):
    """Write OUT_DIR/STEM.pt2 and OUT_DIR/STEM_inputs.pt from the minifier repro REPRO (STEM.py)."""
    tree = _parse(repro)
    config = _inductor_settings(tree)
    store, note = _find_store(repro, tree, save_dir)
    saved = {key: _config_value(key) for key in config}
    try:
        module = _load_module(repro)
        mod = getattr(module, "mod", None)
        if not isinstance(mod, torch.nn.Module):
            repro_cls = getattr(module, "Repro", None)
            if not isinstance(repro_cls, type) or not issubclass(repro_cls, torch.nn.Module):
                raise CaptureError(f"{repro}: defines no `mod` module and no Repro class: not a minifier repro")
            mod = repro_cls()
        config = {k: v for k, v in config.items() if v != _config_default(k)}  # repros list some defaults too
        log = logging.getLogger("torch._dynamo.debug_utils")  # we say ourselves which inputs are random
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reader = _CountingReader(store)
                module.load_args(reader)
        except Exception as e:  # noqa: BLE001
            raise CaptureError(f"{repro}: load_args(reader) failed: {one_line(e)}") from e
        finally:
            log.setLevel(level)
        args = tuple(reader.args)
        try:
            with torch.no_grad():
                ep, names = export_program(mod, args)
        except CaptureError as e:
            raise CaptureError(f"{repro}: {e}") from e
    finally:
        for key, value in saved.items():  # executing the repro set Inductor config in this process
            _set_config(key, value)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(repro))[0])
    inputs = write_inputs(list(args), names, stem + "_inputs.pt")
    exported = write_archive(ep, stem + ".pt2", inputs, [describe(v, n) for v, n in zip(args, names)])
    return Converted(exported, reader.asked, reader.loaded, store, note, config)


def _parse(repro):
    if not os.path.isfile(repro):
        raise CaptureError(f"{repro}: no such file")
    try:
        with open(repro, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=repro)
    except (SyntaxError, UnicodeDecodeError, ValueError) as e:
        raise CaptureError(f"{repro}: not a Python file ({one_line(e)})") from e
    if not any(isinstance(n, ast.FunctionDef) and n.name == "load_args" for n in tree.body):
        raise CaptureError(f"{repro}: no load_args(reader) function: not a repro written by torch's accuracy minifier "
                           "(TORCHDYNAMO_REPRO_AFTER=aot or dynamo writes repro.py with one)")
    return tree


def _literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _inductor_settings(tree):
    """`torch._inductor.config.KEY = LITERAL` lines at the top of the repro, as {KEY: value}."""
    settings = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = ast.unparse(node.targets[0])
            ok, value = _literal(node.value)
            if ok and target.startswith("torch._inductor.config."):
                settings[target.removeprefix("torch._inductor.config.")] = value
    return settings


def _config_value(key):
    try:
        return functools.reduce(getattr, key.split("."), torch._inductor.config)
    except AttributeError:
        return None


def _config_default(key):
    entry = getattr(torch._inductor.config, "_config", {}).get(key)
    return entry.default if entry is not None else _config_value(key)


def _set_config(key, value):
    *parents, last = key.split(".")
    try:
        setattr(functools.reduce(getattr, parents, torch._inductor.config), last, value)
    except (AttributeError, TypeError, ValueError):
        pass


def _find_store(repro, tree, save_dir):
    """The content store (a directory with storages/) holding the repro's inputs, and how it was found."""
    has_storages = lambda d: d is not None and os.path.isdir(os.path.join(d, "storages"))
    if save_dir is not None:
        if not has_storages(save_dir):
            raise CaptureError(f"{save_dir}: no storages/ directory in it: pass the directory the minifier saved the "
                               "inputs to (its checkpoints/ directory, which holds storages/)")
        return save_dir, "--save-dir"
    here = os.path.dirname(os.path.abspath(repro))
    named = None  # the save_dir= of the run_repro(...) call in the __main__ block
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("run_repro"):
            for kw in node.keywords:
                ok, value = _literal(kw.value)
                if kw.arg == "save_dir" and ok and isinstance(value, str):
                    named = value if os.path.isabs(value) else os.path.join(here, value)
                    break
            if named:
                break
    if has_storages(named):
        return named, "the save_dir the repro names"
    why = "the repro names no save_dir" if not named else \
        f"the save_dir it names, {named}, " + ("has no storages/" if os.path.isdir(named) else "does not exist")
    for candidate in (os.path.join(here, "checkpoints"), here):
        if has_storages(candidate):
            return candidate, f"next to the repro; {why}"
    return None, f"{why} and no storages/ is next to the repro"


def _load_module(repro):
    """Execute the repro's module code under a name other than __main__ (its run_repro block stays off)."""
    name = "pt2diff_capture_repro"
    spec = importlib.util.spec_from_file_location(name, repro)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    no_pyc, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ next to the repro
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        raise CaptureError(f"{repro}: executing its module code failed: {one_line(e)}") from e
    finally:
        sys.modules.pop(name, None)
        sys.dont_write_bytecode = no_pyc
    if not callable(getattr(module, "load_args", None)):
        raise CaptureError(f"{repro}: load_args is not a function after running the module code")
    return module


class _CountingReader(InputReader):
    """torch's InputReader (content store read with weights_only=True; random data for what is missing),
    counting how many storages came from the store."""

    def __init__(self, store):
        super().__init__(save_dir=store)
        self.asked = 0
        self.loaded = 0

    def storage(self, storage_hash, nbytes, *, device=None, dtype_hint=None):
        self.asked += 1
        if self.store is not None and storage_hash is not None and \
                os.path.exists(os.path.join(self.store.loc, "storages", storage_hash)):
            self.loaded += 1
        return super().storage(storage_hash, nbytes, device=device, dtype_hint=dtype_hint)
