"""The summary of a batch as JSON (docs/batch-summary.schema.json), text, CSV and an HTML index page."""
import collections
import csv
import html
import io
import json

FORMAT = "pt2diff-batch summary 1"
COLUMNS = ("case", "nodes", "verdict", "culprit_op", "source", "hints", "compiles", "seconds", "failure")


def build(rows, *, sources, options, executor, jobs, wall_seconds, unique, complete):
    """The summary document: `rows` one per place in the corpus (rows.occurrence), in corpus order."""
    verdicts = collections.Counter(r["verdict"] for r in rows if not r["failure"])
    levels = collections.Counter(r.get("level") for r in rows if not r["failure"])
    failures = collections.Counter(r["failure"] for r in rows if r["failure"])
    culprits = collections.Counter(r["culprit_op"] for r in rows if r.get("culprit_op"))
    findings = collections.Counter(f"{h['kind']}:{h['finding']}" for r in rows for h in r.get("hints", []))
    return {
        "format": FORMAT,
        "schema_version": 1,
        "sources": list(sources),
        "options": list(options),
        "executor": executor,
        "jobs": jobs,
        "complete": complete,
        "wall_seconds": round(wall_seconds, 3),
        "counts": {
            "cases": len(rows),
            "unique": unique,
            "agree": verdicts.get("agree", 0),
            "diverged": verdicts.get("diverged", 0),
            "compiler_failed": verdicts.get("compiler_failed", 0),
            "suspicious": levels.get("suspicious", 0),
            "level_fail": levels.get("fail", 0),
            "failed": sum(failures.values()),
            "failures": dict(sorted(failures.items())),
        },
        "culprit_ops": dict(culprits.most_common()),
        "hint_findings": dict(findings.most_common()),
        "cases": rows,
    }


def verdict_text(row):
    """'agree', 'diverged: add_1 FAIL (rmse_exceeds_bound)', or '-' for a case not diagnosed; each output's
    level is shown when the report has one."""
    if not row.get("verdict"):
        return "-"
    failing = [o for o in row.get("outputs", []) if not o.get("pass")]
    shown = failing if failing else []
    parts = []
    for o in shown[:3]:
        level = f"[{o['level']}]" if o.get("level") else ""
        parts.append(f"{o['name']} FAIL{level} ({o['reason']})")
    if len(shown) > 3:
        parts.append(f"+{len(shown) - 3} more")
    passing = len(row.get("outputs", [])) - len(failing)
    tail = f"; {passing} pass" if failing and passing else ""
    nodes = row.get("node_findings") or []
    if nodes:  # the node verdict: a node stands out although the outputs may pass
        f = nodes[0]
        more = len(f.get("also") or []) + len(nodes) - 1
        tail += f"; node {f['node']} {f['level']} ({f['op']}, {float(f['ratio']):.3g}x eager's local error{f', +{more} more' if more else ''})"
    return row["verdict"] + (": " + ", ".join(parts) + tail if parts else tail)


def source_text(row):
    sources = (row.get("culprit") or {}).get("sources") or []
    return sources[0] if sources else ""


def hints_text(row):
    return ", ".join(f"{h['kind']}:{h['finding']}" for h in row.get("hints", []))


def cells(row):
    """The table's cells of a row, as strings."""
    culprit = row.get("culprit_op") or ""
    if not culprit and row.get("culprit") and row["culprit"].get("conclusion") != "named":
        culprit = f"({row['culprit'].get('kind')}: {row['culprit'].get('conclusion')})"
    failure = row["failure"] or ""
    if failure and row.get("message"):
        failure = f"{failure}: {row['message']}"
    if row.get("duplicate_of"):
        failure = (failure + "; " if failure else "") + f"same content as {row['duplicate_of']}"
    return {
        "case": row["case"],
        "nodes": "" if row.get("nodes") is None else str(row["nodes"]),
        "verdict": verdict_text(row),
        "culprit_op": culprit,
        "source": source_text(row),
        "hints": hints_text(row),
        "compiles": "" if row.get("compiles") is None else str(row["compiles"]),
        "seconds": f"{row['seconds']:.2f}",
        "failure": failure,
    }


def to_json(doc):
    return json.dumps(doc, indent=1) + "\n"


def to_csv(doc):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS) + ["graph", "inputs", "report_html"], lineterminator="\n")
    writer.writeheader()
    for row in doc["cases"]:
        writer.writerow(dict(cells(row), graph=row["graph"], inputs=row["inputs"] or "", report_html=row.get("report_html") or ""))
    return out.getvalue()


def _clip(text, width, left=False):
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1:] if left else text[:width - 1] + "…"


def to_text(doc):
    """The table (columns empty in every row left out; long cells clipped, a case's path from the left)
    and the counts."""
    caps = {"case": 40, "nodes": 5, "verdict": 48, "culprit_op": 28, "source": 48, "hints": 44, "compiles": 8, "seconds": 7, "failure": 70}
    heads = {"case": "case", "nodes": "nodes", "verdict": "verdict", "culprit_op": "culprit op", "source": "source line",
             "hints": "hints", "compiles": "compiles", "seconds": "s", "failure": "failure"}
    right = {"nodes", "compiles", "seconds"}
    table = [cells(row) for row in doc["cases"]]
    columns = [col for col in COLUMNS if col == "case" or any(r[col] for r in table)]
    widths = {col: min(caps[col], max([len(heads[col])] + [len(r[col]) for r in table])) for col in columns}

    def line(values):
        parts = []
        for col in columns:
            v = _clip(values[col], widths[col], left=col == "case")
            parts.append(v.rjust(widths[col]) if col in right else v.ljust(widths[col]))
        return "  ".join(parts).rstrip()

    c = doc["counts"]
    out = [line(heads)]
    out += [line(r) for r in table]
    out.append("")
    fails = ", ".join(f"{k} {v}" for k, v in c["failures"].items())
    out.append(f"{c['cases']} cases ({c['unique']} distinct): {c['agree']} agree, {c['diverged']} diverged, "
               f"{c['compiler_failed']} compiler failed, {c['failed']} not diagnosed" + (f" ({fails})" if fails else "")
               + f"; {doc['wall_seconds']:.1f} s on {doc['executor']} ({doc['jobs']} at a time)"
               + ("" if doc["complete"] else "; INCOMPLETE: rerun with --resume"))
    if doc["culprit_ops"]:
        out.append("culprit ops: " + ", ".join(f"{k} ×{v}" for k, v in doc["culprit_ops"].items()))
    if doc["hint_findings"]:
        out.append("hint findings: " + ", ".join(f"{k} ×{v}" for k, v in doc["hint_findings"].items()))
    return "\n".join(out) + "\n"


_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var up = th.dataset.dir !== 'asc'; th.dataset.dir = up ? 'asc' : 'desc';
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return up ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; } table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; font-size: 0.9em; }
th { background: #eee; cursor: pointer; } tr.agree td.v { color: #176317; } tr.diverged td.v { color: #a40000; }
tr.failed td.v, td.f { color: #8a5300; } code { font-size: 0.95em; }
"""


def to_html(doc):
    e = html.escape
    c = doc["counts"]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>pt2diff batch: {c['cases']} cases</title>",
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>pt2diff batch: {c['cases']} cases</h1>",
             f"<p>{c['cases']} cases ({c['unique']} distinct): {c['agree']} agree, {c['diverged']} diverged, "
             f"{c['compiler_failed']} compiler failed, {c['failed']} not diagnosed; {doc['wall_seconds']:.1f} s on "
             f"{e(doc['executor'])} ({doc['jobs']} at a time){'' if doc['complete'] else '; <b>incomplete</b>: rerun with --resume'}. "
             f"Sources: {e(' '.join(doc['sources']))}; options: <code>{e(' '.join(doc['options']))}</code>. "
             "Click a column to sort.</p>"]

    def counts_table(title, counts):
        if not counts:
            return f"<h2>{e(title)}</h2><p>none</p>"
        rows = "".join(f"<tr><td>{e(k)}</td><td data-v='{v}'>{v}</td></tr>" for k, v in counts.items())
        return f"<h2>{e(title)}</h2><table class='sortable'><thead><tr><th>{e(title)}</th><th>cases</th></tr></thead><tbody>{rows}</tbody></table>"

    heads = ("case", "nodes", "verdict", "culprit op", "source line", "hints", "compiles", "seconds", "failure")
    parts.append("<h2>Cases</h2><table class='sortable'><thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead><tbody>")
    for row in doc["cases"]:
        cell = cells(row)
        klass = "failed" if row["failure"] else (row.get("verdict") or "")
        name = e(cell["case"])
        link = f"<a href='{e(row['report_html'])}'>{name}</a>" if row.get("report_html") else name
        parts.append(f"<tr class='{e(klass)}'><td>{link}</td><td data-v='{cell['nodes'] or -1}'>{cell['nodes']}</td>"
                     f"<td class='v'>{e(cell['verdict'])}</td><td><code>{e(cell['culprit_op'])}</code></td><td>{e(cell['source'])}</td>"
                     f"<td>{e(cell['hints'])}</td><td>{cell['compiles']}</td><td data-v='{row['seconds']}'>{cell['seconds']}</td>"
                     f"<td class='f'>{e(cell['failure'])}</td></tr>")
    parts.append("</tbody></table>")
    parts.append(counts_table("culprit op", doc["culprit_ops"]))
    parts.append(counts_table("hint finding", doc["hint_findings"]))
    parts.append(counts_table("failure kind", c["failures"]))
    parts.append(f"<script>{_SCRIPT}</script></body></html>\n")
    return "".join(parts)


def comparable(doc):
    """The summary without what legitimately differs between two runs of one corpus (timings, the executor
    and its parallelism): two runs of the same corpus with the same options give equal values."""
    from .rows import TIMING_FIELDS
    out = {k: v for k, v in doc.items() if k not in ("wall_seconds", "executor", "jobs")}
    out["cases"] = [{k: v for k, v in row.items() if k not in TIMING_FIELDS} for row in doc["cases"]]
    return out
