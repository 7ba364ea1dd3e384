"""A case's row of the summary, from the exit code of `pt2diff` and its JSON report (docs/report.schema.json).

The one place a row is built, for local and Ray runs alike. TIMING_FIELDS are the fields whose values
legitimately differ between two runs of the same corpus (wall-clock seconds, where and when it ran);
everything else is a function of the case and pt2diff's report.
"""
import signal

# Fields of a row that differ between runs of one corpus: timings and where/when a case ran.
TIMING_FIELDS = ("seconds", "inspect_seconds", "report_seconds", "compile_seconds")

# Failure kinds of a case (the summary's `failure`), besides null for a case that was diagnosed.
FAILURE_KINDS = (
    "bad_input",       # exit 2: the archive or inputs do not load or bind, unsupported ops, too big (--max-memory)
    "internal_error",  # exit 3, or a report missing or unreadable after exit 0/1: a bug in pt2diff
    "crashed",         # pt2diff was killed by a signal (SIGSEGV, the OOM killer's SIGKILL, ...)
    "hung",            # the case ran past --case-timeout: its process group was killed
    "worker_lost",     # Ray lost the worker or node running it (killed, out of memory, the node went away): not
                       # a property of the case; --resume runs it again (RERUN_ON_RESUME)
    "compile_failed", "run_failed", "worker_died", "timed_out", "unusable", "out_of_memory",  # exit 4: the compiler (failure.h)
    "compiler_failed",  # exit 4 without a compile record naming the kind
    "export_failed",   # a capture entry whose torch.export failed: there is no archive to diagnose
    "not_captured",    # a capture entry whose graph was never called
)

# Failures that say nothing about the case, only about where it ran: --resume runs these cases again.
RERUN_ON_RESUME = ("worker_lost",)


def _last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return last[len("pt2diff: "):] if last.startswith("pt2diff: ") else last


def _outputs(report):
    rows = []
    for o in report.get("outputs", []):
        row = {"name": o.get("name"), "pass": o.get("pass"), "reason": o.get("reason")}
        if "level" in o:  # a verdict level (pass/suspicious/fail), when the engine gives one
            row["level"] = o["level"]
        rows.append(row)
    return rows


def _node_findings(report):
    """The node verdict's findings (nodes whose compiled local error stands out against eager's), in short."""
    nv = report.get("node_verdict")
    if not isinstance(nv, dict):
        return []
    return [{"node": f.get("node"), "op": f.get("op"), "source": f.get("source"), "ratio": f.get("ratio"), "level": f.get("level"),
             "also": [a.get("node") for a in f.get("also") or [] if isinstance(a, dict)]}
            for f in nv.get("findings") or [] if isinstance(f, dict)]


def _culprit(report):
    loc = report.get("localization")
    if not isinstance(loc, dict) or not isinstance(loc.get("culprit"), dict):
        return None, []
    c = loc["culprit"]
    culprit = {k: c.get(k) for k in ("kind", "conclusion", "summary", "nodes", "ops", "sources")}
    hints = [{"kind": h.get("kind"), "finding": h.get("finding")} for h in loc.get("hints") or [] if isinstance(h, dict)]
    return culprit, hints


def culprit_op(culprit):
    """The op the summary counts a culprit under: its op, or its ops joined by ' + ' for a window; None
    when no op was named."""
    if not culprit or culprit.get("conclusion") != "named" or not culprit.get("ops"):
        return None
    return " + ".join(culprit["ops"])


def _compile_failure(report):
    for c in (report or {}).get("compiles", []):
        if not c.get("ok") and c.get("failure"):
            return c["failure"], c.get("message") or ""
    return None, ""


def make_row(case, *, inspect, returncode, timed_out, report, stderr, seconds, inspect_seconds, timeout, stage=None):
    """The row of `case` (cases.Case) after it ran: `inspect` its parsed `pt2diff inspect --json` (or None),
    `returncode` the exit code of the last command (`stage`: "inspect" or "diff"; negative: a signal),
    `report` the parsed --json report (or None), `stderr` the tail of its stderr."""
    row = {
        "case": case.name,
        "key": case.key,
        "graph": case.graph,
        "inputs": case.inputs,
        "options": case.options,
        "where": case.where,
        "nodes": inspect.get("nodes") if inspect else None,
        "memory_estimate": (inspect.get("memory") or {}).get("bytes") if inspect else None,
        "verdict": None,
        "level": None,
        "node_findings": [],
        "outputs": [],
        "culprit": None,
        "culprit_op": None,
        "hints": [],
        "compiles": None,
        "exit_code": returncode,
        "failure": None,
        "message": "",
        "seconds": round(seconds, 3),
        "inspect_seconds": round(inspect_seconds, 3),
        "report_seconds": None,
        "compile_seconds": None,
    }
    if case.failure:
        row.update(failure=case.failure, message=case.message or "")
        return row
    if report:
        culprit, hints = _culprit(report)
        compiles = report.get("compiles", [])
        row.update(verdict=report.get("verdict"), level=report.get("level"), node_findings=_node_findings(report),
                   outputs=_outputs(report), culprit=culprit, culprit_op=culprit_op(culprit),
                   hints=hints, compiles=len(compiles), report_seconds=report.get("seconds"),
                   compile_seconds=round(sum(c.get("compile_seconds", 0) for c in compiles), 3))
        if row["nodes"] is None and isinstance(report.get("nodes"), list):
            row["nodes"] = len(report["nodes"])
    if timed_out:
        row.update(failure="hung", message=f"{stage or 'pt2diff'} ran past --case-timeout {timeout:g} s: its process group was killed")
    elif returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        row.update(failure="crashed", message=f"pt2diff was killed by {name}" + (f": {_last_line(stderr)}" if _last_line(stderr) else ""))
    elif returncode == 2:
        row.update(failure="bad_input", message=_last_line(stderr))
    elif returncode == 4:
        kind, message = _compile_failure(report)
        row.update(failure=kind or "compiler_failed", message=_last_line(message) or _last_line(stderr))
    elif returncode in (0, 1) and stage == "diff" and report is None:
        row.update(failure="internal_error", message="pt2diff exited %d without a readable JSON report" % returncode)
    elif returncode not in (0, 1):
        row.update(failure="internal_error", message=_last_line(stderr) or f"exit code {returncode}")
    return row


def occurrence(row, case, first_name):
    """The row of `case`, a place in the corpus whose content hash equals that of the diagnosed `row`:
    the diagnosis of `row` under its own name, paths and source location, with `duplicate_of` naming
    where it was diagnosed (None for that first place)."""
    out = dict(row)
    out.update(case=case.name, graph=case.graph, inputs=case.inputs, where=case.where,
               duplicate_of=None if case.name == first_name else first_name)
    return out
