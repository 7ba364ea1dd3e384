"""The result objects of pt2diff.diff, pt2diff.sweep and pt2diff.explain.

Their attributes are the fields of the JSON reports (docs/report.schema.json, docs/sweep.schema.json),
read from the same document that ``to_json()`` returns: a field the engine adds to the JSON shows up as
an attribute with no change here. Objects are :class:`Record` (``r.outputs[0].reason``,
``r.outputs[0]["pass"]``), arrays are lists, and the JSON's non-finite numbers (written "NaN",
"Infinity") are floats again.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from . import _pt2diff


def _numeric_fields(schema: dict) -> frozenset:
    """The fields a report writes as numbers, or as "NaN"/"Infinity"/"-Infinity" where they are not finite: those
    its schema types as ``$defs/number``. The schema is the engine's own (``_pt2diff.report_schema()``, read off the
    same description as the JSON writer), so a numeric field the engine adds is read as a float here too."""
    found = set()

    def numeric(prop: dict) -> bool:
        return prop.get("$ref") == "#/$defs/number" or any(numeric(alt) for alt in prop.get("oneOf", []))

    def walk(node):
        if isinstance(node, dict):
            found.update(key for key, prop in node.get("properties", {}).items() if numeric(prop))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return frozenset(found)


_NUMERIC = _numeric_fields(json.loads(_pt2diff.report_schema()))
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _numbers(obj: dict) -> dict:
    for key, value in obj.items():
        if key in _NUMERIC and isinstance(value, str):
            obj[key] = _NON_FINITE.get(value, value)
        elif key == "evidence" and isinstance(value, dict):
            for name, number in value.items():
                if isinstance(number, str):
                    value[name] = _NON_FINITE.get(number, number)
    return obj


def _decode(text: str) -> Any:
    return json.loads(text, object_hook=_numbers)


def _view(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value


class Record:
    """One JSON object of a report, read as attributes (``rec.name``) or items (``rec["pass"]``).

    A field that is a Python keyword is also an attribute with a trailing underscore (``rec.pass_``).
    ``to_dict()`` gives the plain data.
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, key: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if key in data:
            return _view(data[key])
        if key.endswith("_") and key[:-1] in data:
            return _view(data[key[:-1]])
        raise AttributeError(f"no field '{key}' here (fields: {', '.join(data)})")

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("report fields are read-only")

    def __getitem__(self, key: str) -> Any:
        return _view(self._data[key])

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __dir__(self):
        return sorted(set(self._data) | set(super().__dir__()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    def keys(self):
        """The field names, in the report's order."""
        return self._data.keys()

    def get(self, key: str, default: Any = None) -> Any:
        """The field, or ``default`` when there is none."""
        return _view(self._data[key]) if key in self._data else default

    def to_dict(self) -> dict:
        """The fields as plain dicts, lists and numbers (a copy)."""
        return json.loads(json.dumps(self._data))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._data.items() if not isinstance(v, (dict, list)))
        return f"{type(self).__name__}({shown})"


class OutputValues(NamedTuple):
    """One graph output's tensors from the three runs (None where a run has no value)."""

    name: str
    compiled: Any
    eager: Any
    fp64: Any


class DiffResult(Record):
    """What :func:`pt2diff.diff` found: the fields of the CLI's ``--json`` report as attributes.

    The main ones: ``verdict`` ("agree", "diverged", "compiler_failed"), ``level`` ("pass", "suspicious",
    "fail"), ``outputs`` (per output: ``name``, ``role``, ``pass``, ``level``, ``reason``, ``detail``,
    ``error_ratio``, ``blind_spot``, ``compiled_to_fp64`` and ``eager_to_fp64`` metrics; a graph input the graph
    writes in place is an output too, named ``"input 'x' after the graph"`` with ``value`` ``"x"``),
    ``nodes`` (per node: ``name``, ``op``, ``source``, ``module_path``, ``local_ulp``, ``values`` with their
    ``local``, ``propagated`` and ``compiled_local`` metrics), ``ranking``, ``compiles``, ``localization``
    (``culprit``, ``hints``, ``probes``, ``repro``; None when none ran), ``workaround`` (the smallest eager set:
    ``conclusion``, ``nodes``, ``levers``, ``lines``, ``verified``; None unless ``workaround=True``),
    ``tolerance``, ``warnings``.
    """

    __slots__ = ("_native",)

    def __init__(self, native):
        super().__init__(_decode(native.to_json()))
        object.__setattr__(self, "_native", native)

    @property
    def diverged(self) -> bool:
        """Some output fails the rule."""
        return self._native.diverged

    @property
    def compiled_failed(self) -> bool:
        """A compile or a compiled run failed (see ``compiles``)."""
        return self._native.compiled_failed

    @property
    def suspicious(self) -> bool:
        """Some output passes the rule but is at least ``suspicious_ratio`` times farther from fp64 than eager."""
        return self["suspicious"]

    @property
    def node_findings(self) -> list:
        """The nodes that stand out (``node_verdict.findings``): compiled local error at least ``node_ratio`` times
        eager's on the same fp64-exact inputs, whatever the outputs say; each with ``node``, ``op``, ``source``,
        ``module_path``, ``ratio``, ``eager_local``, ``compiled_local`` and ``also`` (the same op and shape elsewhere)."""
        return self.node_verdict.findings

    @property
    def agrees(self) -> bool:
        """The run does not count as failing: no output diverges, the compiler did not fail, the node verdict
        does not fail, and (with ``fail_on_suspicious``) neither an output nor the node verdict is suspicious:
        what assert_agrees asserts (the CLI's exit code 0)."""
        return not self["fails"]

    @property
    def suspicious_outputs(self) -> list:
        """The outputs whose level is "suspicious"."""
        return [o for o in self.outputs if o["level"] == "suspicious"]

    @property
    def failing_outputs(self) -> list:
        """The outputs that fail the rule."""
        return [o for o in self.outputs if not o["pass"]]

    @property
    def culprit(self) -> Record | None:
        """Where the divergence comes from (``localization.culprit``), or None."""
        return self.localization.culprit if self.localization is not None else None

    @property
    def compiler_search(self) -> Record | None:
        """The compiler's decision that makes the whole graph diverge (docs/compiler-search.md): ``conclusion``,
        ``decision`` (``subsystem``, ``index``, ``what``, ``nodes``), ``verified``, ``workaround``, ``steps``; None when
        the search did not run (it runs when only the whole compile diverges, or with ``search_compiler=True``). When
        localization named nothing, ``culprit.kind`` is then ``"compiler_decision"``."""
        return self.get("compiler_search")

    @property
    def eager_nonfinite(self) -> str | None:
        """A training step whose eager loss or gradient is not finite (its own math, not the compiler's): the line
        naming the output, the first node whose eager value is not, and what to do (the CLI exits 2); else None."""
        return self.get("eager_nonfinite")

    @property
    def culprit_phase(self) -> str | None:
        """In a training step's report (docs/training.md): "backward" when the culprit's first node is a backward
        node (its ``backward_of`` names the forward node it is the gradient of), "forward" when not; None without
        a culprit."""
        c = self.culprit
        if c is None or not c.get("nodes"):
            return None
        node = next((n for n in self.nodes if n["name"] == c["nodes"][0]), None)
        return "backward" if node is not None and node.get("backward_of") else "forward"

    @property
    def hints(self) -> list:
        """Why the culprit diverges (``localization.hints``): kind, finding, summary, suggestion, evidence, notes."""
        return self.localization.hints if self.localization is not None else []

    @property
    def probes(self) -> list:
        """The localization's questions to the compiler (``localization.probes``)."""
        return self.localization.probes if self.localization is not None else []

    def output_values(self) -> list[OutputValues]:
        """Every output's compiled, eager and fp64 tensors (torch tensors, shared with the engine)."""
        return [OutputValues(*v) for v in self._native.output_values()]

    def to_json(self) -> str:
        """The report as JSON: the document the CLI's ``--json`` writes (docs/report.schema.json)."""
        return self._native.to_json()

    def to_text(self) -> str:
        """The readable report the CLI prints."""
        return self._native.to_text()

    def to_html(self, command: str = "") -> str:
        """The report as one self-contained HTML page (the CLI's ``--html``); ``command`` is shown as how to rerun it."""
        return self._native.to_html(command)

    def summary(self) -> str:
        """A few lines: failing outputs with numbers, culprit, hints, repro; or "agrees: ..." (results.h: to_summary)."""
        return self._native.to_summary()

    def failure_message(self) -> str:
        """What a failing test prints: testing.h's message (results.h: to_failure_message)."""
        return self._native.to_failure_message()

    def __repr__(self) -> str:
        return f"<pt2diff.DiffResult {self.verdict}: {self.graph} with {self.inputs}, compiled = {self.compiled}>"


class _Sweep(Record):
    """A sweep's result: the fields of its JSON, and the reports the CLI writes (the native handle's)."""

    __slots__ = ("_native",)

    def __init__(self, native):
        super().__init__(_decode(native.to_json()))
        object.__setattr__(self, "_native", native)

    def to_json(self) -> str:
        """The JSON the CLI's ``--json`` writes (the class's schema)."""
        return self._native.to_json()

    def to_text(self) -> str:
        """The table the CLI prints."""
        return self._native.to_text()

    def to_csv(self) -> str:
        """The rows ``--csv`` writes."""
        return self._native.to_csv()


class SweepResult(_Sweep):
    """What :func:`pt2diff.sweep` found: the fields of ``pt2diff sweep --json`` (docs/sweep.schema.json); ``to_csv()``
    has one row per (point, output)."""

    __slots__ = ()

    @property
    def run(self) -> DiffResult:
        """The one set of runs, judged at the rule's own tolerance."""
        return DiffResult(self._native.run)

    def to_svg(self) -> str:
        """The plot ``--plot`` writes."""
        return self._native.to_svg()

    def to_html(self) -> str:
        """The run's report as an HTML page (the sweep's own plot is ``to_svg()``)."""
        return self.run.to_html()


class SizeSweepResult(_Sweep):
    """What :func:`pt2diff.sweep_sizes` found: the fields of ``pt2diff sizes --json`` (docs/sizes.schema.json):
    ``points`` (one per size: ``symbol``, ``size``, ``level``, ``fails``, ``worst_ratio``, ``node``, ``culprit``,
    ``recompiles``, ``refused``), ``shapes`` (how the first compile treated the dynamic dims), ``static_check``,
    ``localized`` (the run at each dim's smallest failing size), ``compiles``, ``recompiles``; ``to_csv()`` has one
    row per size."""

    __slots__ = ()

    def failing_sizes(self, symbol=None) -> list[int]:
        """The sizes that fail, ascending (of `symbol` only, when given)."""
        return [p.size for p in self.points if p.fails and (symbol is None or p.symbol == symbol)]

    def to_html(self) -> str:
        """The page ``--html`` writes: the table and the plot of the worst ratios against the size."""
        return self._native.to_html()


class RecheckResult(Record):
    """What :func:`pt2diff.recheck` found: the fields of one case of ``pt2diff recheck --json``
    (docs/recheck.schema.json): ``rows`` (one per torch: ``label``, ``python``, ``version``, ``level``, ``fails``,
    ``problem``, ``worst_ratio``, ``culprit``, ``culprit_op``, ``culprit_ratio``, ...), ``regressions`` (``good``,
    ``bad``, ``fixed``, ``changed`` nodes with ``before``/``after``/``eager``/``factor``, ``first_diverging``),
    ``bisection`` (``first_bad``, ``runs``, ``summary``) or None."""

    __slots__ = ("_native",)

    def __init__(self, native):
        super().__init__(_decode(native.to_json())["cases"][0])
        object.__setattr__(self, "_native", native)

    def first_bad(self):
        """The row of the first bad torch the bisection named, else the first failing row, else None."""
        if self.bisection is not None and self.bisection.first_bad is not None:
            return self.rows[self.bisection.first_bad]
        return next((r for r in self.rows if r.fails), None)

    def to_json(self) -> str:
        """The JSON ``pt2diff recheck --json`` writes for this one case (the document, with ``cases`` of one)."""
        return self._native.to_json()

    def to_text(self) -> str:
        """The table the CLI prints."""
        return self._native.to_text()


class DistResult(Record):
    """What :func:`pt2diff.diff_distributed` found: the fields of ``pt2diff dist --json`` (docs/distributed.md):
    ``world_size``, ``graphs`` (per graph: ``kind``, ``collectives``, ``ranks`` with each rank's ``outputs``,
    ``compiled_failed`` and ``rank_local``, the whole single-graph report of its rank-local program; ``across``, the
    values the reference makes equal on every rank checked on the compiled ranks), ``culprits`` (``kind``:
    ``rank_local``, ``collectives``, ``rank_alone`` or ``inconclusive``; ``graph``, ``rank``, ``nodes``, ``ops``,
    ``sources``, ``summary``), ``diverged``, ``compiled_failed``."""

    __slots__ = ("_text",)

    def __init__(self, json_text: str, text: str):
        super().__init__(_decode(json_text))
        object.__setattr__(self, "_text", text)

    @property
    def agrees(self) -> bool:
        """Every rank's compiled graphs agree with the reference and nothing failed to compile."""
        return not self._data["diverged"] and not self._data["compiled_failed"]

    def to_text(self) -> str:
        """The report ``pt2diff dist`` prints."""
        return self._text

    def to_json(self) -> str:
        """The JSON ``pt2diff dist --json`` writes."""
        return json.dumps(self._data, indent=1)


class Explanation:
    """What :func:`pt2diff.explain` found: ``hints`` (Records as in ``localization.hints``) and the text."""

    def __init__(self, header: str, hints_json: str, hints_text: str):
        self.hints = _view(_decode(hints_json))
        self._header = header
        self._json = hints_json
        self._text = hints_text

    def to_json(self) -> str:
        """The hints as a JSON array (each as in docs/report.schema.json's localization.hints)."""
        return self._json

    def to_text(self) -> str:
        """What ``pt2diff explain`` prints."""
        return self._header + self._text

    def __repr__(self) -> str:
        return f"<pt2diff.Explanation {len(self.hints)} hints>"
