#!/usr/bin/env python3
"""Every output of the CLI over the fixtures, timings masked: run it with the binary before and after a
redesign and `diff -r` the two folders (docs/architecture.md: "byte-identical before and after").

    python3 scripts/cli_outputs.py PT2DIFF OUT [--jobs N] [--only NAME,...]

For each fixture archive with inputs (fixtures/*.pt2): the diff with the eager backend under every --rule,
with a planted fault (fault:NODE:scale=0.05, which localizes and explains) under two rules, a sweep, and
the usage errors of --rule; stdout, stderr, the exit code, the JSON and the HTML report of each, with
wall times, dates and temporary paths replaced by fixed words. No Inductor: it runs in minutes on 2 cores.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
RULES = ["same", "allclose", "ulp:4", "cosine:0.999", "relative"]

TIMES = [
    (re.compile(r"\d+(\.\d+)?(e-?\d+)? ?(ms|s|min)\b"), "TIME"),
    (re.compile(r"\d+m\d+s\b"), "TIME"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?"), "DATE"),
    (re.compile(r"/tmp/[A-Za-z0-9_.-]+"), "/tmp/X"),
    (re.compile(r'<td class="n">\d+\.\d+</td></tr>'), "SECONDS</tr>"),  # the search's probes: seconds, last
]
TIME_KEYS = re.compile(r"seconds|_s$|time|elapsed|wall|rss|peak|date|pid|host")


def mask_text(text):
    for pattern, word in TIMES:
        text = pattern.sub(word, text)
    return text


def mask_json(value, key=""):
    if isinstance(value, dict):
        return {k: mask_json(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_json(v, key) for v in value]
    if TIME_KEYS.search(key) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "MASKED"
    if isinstance(value, str):
        return mask_text(value)
    return value


def cases():
    out = []
    for graph in sorted(glob.glob(os.path.join(FIXTURES, "*.pt2"))):
        name = os.path.basename(graph)[:-4]
        stem = name[:-5] if name.endswith("_core") else name
        inputs = os.path.join(FIXTURES, stem + "_inputs.pt")
        if os.path.exists(inputs):
            out.append((name, graph, inputs))
    return out


def first_node(pt2diff, graph, inputs):
    """The first top-level node of a floating op that a fault can scale (from an eager diff's node table)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        subprocess.run([pt2diff, graph, inputs, "--compiled", "eager", "--json", report], capture_output=True)
        if not os.path.exists(report):
            return None
        with open(report) as f:
            nodes = json.load(f)["nodes"]
    for n in nodes:
        if not any(skip in n["op"] for skip in ("assert", "getitem", "sym_size")):
            return n["name"]
    return None


def commands(pt2diff, name, graph, inputs):
    node = first_node(pt2diff, graph, inputs)
    runs = [(f"eager_{rule.replace(':', '-')}", [graph, inputs, "--compiled", "eager", "--rule", rule]) for rule in RULES]
    if node:
        for rule in ("same", "relative"):
            runs.append((f"fault_{rule}", [graph, inputs, "--compiled", f"fault:{node}:scale=0.05", "--rule", rule]))
        runs.append(("sweep", ["sweep", graph, inputs, "--compiled", f"fault:{node}:scale=0.05", "--tol", "1e-5:1e-1:5"]))
        runs.append(("sweep_ulp", ["sweep", graph, inputs, "--compiled", "eager", "--rule", "ulp:4", "--tol", "1e-3"]))
    runs.append(("bad_rule", [graph, inputs, "--compiled", "eager", "--rule", "same:1"]))
    runs.append(("ulp_without_bound", [graph, inputs, "--compiled", "eager", "--rule", "ulp"]))
    return [(f"{name}/{label}", args) for label, args in runs]


def run_one(pt2diff, out, label, args):
    folder = os.path.join(out, label)
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        extra = [] if args[0] == "sweep" else ["--json", os.path.join(tmp, "report.json"), "--html", os.path.join(tmp, "report.html")]
        if args[0] == "sweep":
            extra = ["--json", os.path.join(tmp, "report.json")]
        env = dict(os.environ, PT2DIFF_PROGRESS="never", OMP_NUM_THREADS="1")
        run = subprocess.run([pt2diff, *args, *extra], capture_output=True, text=True, env=env, cwd=tmp)
        with open(os.path.join(folder, "stdout"), "w") as f:
            f.write(mask_text(run.stdout.replace(tmp, "TMP").replace(pt2diff, "PT2DIFF")))
        with open(os.path.join(folder, "stderr"), "w") as f:
            f.write(mask_text(run.stderr.replace(tmp, "TMP").replace(pt2diff, "PT2DIFF")))
        with open(os.path.join(folder, "rc"), "w") as f:
            f.write(f"{run.returncode}\n")
        for report in ("report.json", "report.html"):
            path = os.path.join(tmp, report)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                text = f.read().replace(tmp, "TMP").replace(pt2diff, "PT2DIFF")
            if report.endswith(".json"):
                text = json.dumps(mask_json(json.loads(text)), indent=1, sort_keys=True)
            else:
                text = mask_text(text)
            with open(os.path.join(folder, report), "w") as f:
                f.write(text)
    return label, run.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pt2diff")
    p.add_argument("out")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated fixture names")
    a = p.parse_args()
    pt2diff = os.path.abspath(a.pt2diff)
    only = set(filter(None, a.only.split(",")))
    todo = []
    for name, graph, inputs in cases():
        if not only or name in only:
            todo += commands(pt2diff, name, graph, inputs)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        done = list(pool.map(lambda c: run_one(pt2diff, a.out, *c), todo))
    print(f"{len(done)} runs into {a.out}: exit codes " +
          ", ".join(f"{rc}: {sum(1 for _, r in done if r == rc)}" for rc in sorted({r for _, r in done})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
