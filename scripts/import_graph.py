#!/usr/bin/env python3
"""The import graph of pt2diff's folders, measured from the code: which folder's files include (C++) or import
(Python) which other folder's, each folder's layer, the arrows that run back up a layer and the circles.

    python3 scripts/import_graph.py                 the graph as docs/architecture.md shows it (markdown)
    python3 scripts/import_graph.py --check DOC     exit 1 when DOC's block (between the import-graph markers) is not
                                                    what the code gives, an arrow runs back up, a circle closes, or a
                                                    folder has no layer (ctest import_graph_is_the_architecture_docs)

A C++ folder is include/pt2diff (the public API), include/pt2diff/advanced, graphs, or a folder of engine/; a Python
one is a package of python/. An arrow A -> B (n) is n #include "B/..." lines (or imports of B) in A's files. The
layers are declared below, bottom first; a folder may use its own layer and those below it.
"""
import argparse
import os
import re
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Bottom first. Each row: (layer, its folders, what it is).
LAYERS = [
    ("api", ["include/pt2diff", "include/pt2diff/advanced"], "the public types and declarations; no engine header"),
    ("ir", ["graphs"], "the IR, the DAG, regions, the storage model, the DAG layout (no torch)"),
    ("torch-free judging and wording", ["graphs/rules", "graphs/search", "graphs/options", "graphs/wording"],
     "the verdict rules, the localization search, the option table, the sentences of a run (no torch)"),
    ("loading and measuring", ["engine/load", "engine/compare", "engine/localize"],
     "the archive and inputs loaders, metrics and judge(), the compiled oracle (torch)"),
    ("running", ["engine/execution"], "the interpreter and its kernels"),
    ("graph facts", ["engine/inspect"], "what a graph holds (pt2diff inspect, the autocast regions' JSON)"),
    ("processes", ["engine/worker"], "the worker protocol, processes and server"),
    ("compilers", ["engine/backends"], "one backend per compiled side"),
    ("experiments", ["engine/hints"], "the hints' experiments"),
    ("the job", ["engine/diff"], "the stage table and its stages"),
    ("around the job", ["engine/sweep", "engine/dist", "engine/report"], "sweeps, sizes, recheck, distributed steps; text, JSON, HTML"),
    ("front ends", ["engine/cli", "engine/python"], "the CLI and the Python binding"),
]
#: The Python packages (python/), bottom first, with what they are; they run apart from the engine (the worker is a
#: process the engine talks to, not an import).
PY_LAYERS = [
    ("python: capture", ["python/pt2diff_capture"], "export and capture, torch only"),
    ("python: worker", ["python/pt2diff_worker"], "the compiler's side of the worker protocol"),
    ("python: module", ["python/pt2diff"], "the Python API over the binding"),
    ("python: batch", ["python/pt2diff_batch"], "pt2diff batch (runs the CLI)"),
]


def cxx_folder(path):
    parts = path.split("/")
    if parts[0] == "include":
        return "include/pt2diff/advanced" if len(parts) > 3 and parts[2] == "advanced" else "include/pt2diff"
    if parts[0] == "graphs":
        return "graphs/" + parts[1] if len(parts) > 2 else "graphs"
    if parts[0] == "engine" and len(parts) > 2:
        return "engine/" + parts[1]
    return None


def cxx_edges():
    edges = defaultdict(Counter)
    include = re.compile(r'\s*#\s*include\s+"([^"]+)"')
    for top in ("engine", "graphs", "include"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".cpp", ".h", ".in")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), ROOT)
                src = cxx_folder(path)
                with open(os.path.join(ROOT, path), errors="replace") as f:
                    for line in f:
                        m = include.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        dst = cxx_folder("include/" + target) if target.startswith("pt2diff/") else cxx_folder(target)
                        if dst and src and dst != src:
                            edges[src][dst] += 1
    return edges


def python_edges():
    edges = defaultdict(Counter)
    packages = [p for _, folders, _ in PY_LAYERS for p in folders]
    names = {p.split("/")[1]: p for p in packages}
    imported = re.compile(r"\s*(?:from|import)\s+(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    for package in packages:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                with open(os.path.join(folder, name), errors="replace") as f:
                    for line in f:
                        m = imported.match(line)
                        if m and names[m.group(1)] != package:
                            edges[package][names[m.group(1)]] += 1
    return edges


def circles(edges):
    """The strongly connected sets of two or more folders (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(set(edges) | {w for e in edges.values() for w in e}):
        if v not in index:
            visit(v)
    return out


def report():
    """(markdown, problems)."""
    problems = []
    lines = []
    for layers, edges in ((LAYERS, cxx_edges()), (PY_LAYERS, python_edges())):
        level = {f: i for i, (_, folders, _) in enumerate(layers) for f in folders}
        seen = set(edges) | {w for e in edges.values() for w in e}
        for f in sorted(seen - set(level)):
            problems.append(f"{f} has no layer: add it to LAYERS in scripts/import_graph.py")
        back = [(a, b) for a in edges for b in edges[a] if a in level and b in level and level[b] > level[a]]
        lines += ["| layer | folder | uses (#include or import lines) |", "|---|---|---|"]
        for i, (name, folders, what) in reversed(list(enumerate(layers))):
            for k, f in enumerate(folders):
                used = sorted(edges.get(f, {}).items(), key=lambda e: (level.get(e[0], -1), e[0]), reverse=True)
                uses = ", ".join(f"{b} ({n})" for b, n in used)
                lines.append(f"| {f'{i}. {name}: {what}' if k == 0 else ''} | `{f}` | {uses or '-'} |")
        found = circles(edges)
        lines.append("")
        lines.append(f"Arrows back up a layer: {', '.join(f'{a} -> {b}' for a, b in sorted(back)) or 'none'}. "
                     f"Circles: {'; '.join(' <-> '.join(c) for c in found) or 'none'}.")
        lines.append("")
        problems += [f"{a} -> {b} runs back up a layer" for a, b in sorted(back)]
        problems += [f"a circle: {' <-> '.join(c)}" for c in found]
    return "\n".join(lines).rstrip() + "\n", problems


BEGIN, END = "<!-- import-graph -->", "<!-- /import-graph -->"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="DOC", help="compare DOC's block with the code's graph")
    a = ap.parse_args()
    text, problems = report()
    if not a.check:
        sys.stdout.write(text)
        for p in problems:
            print("import_graph.py: " + p, file=sys.stderr)
        return 1 if problems else 0
    with open(a.check) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        problems.append(f"{a.check} has no {BEGIN} ... {END} block")
    elif doc.split(BEGIN, 1)[1].split(END, 1)[0].strip() != text.strip():
        problems.append(f"{a.check}'s import graph is not the code's: paste the output of `python3 scripts/import_graph.py` "
                        f"between its markers")
    for p in problems:
        print("import_graph.py: " + p, file=sys.stderr)
    if not problems:
        print(f"import graph: {a.check} is the code's; no arrow back up a layer, no circle")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
