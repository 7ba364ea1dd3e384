#!/usr/bin/env python3
"""The suite's cost budget: what each test costs cold, which tier runs it, and whether the README test command fits.

    python3 tests/suite_budget.py --check BUILD      the ctest `suite_budget_is_kept` (quick): every test has a row
    python3 tests/suite_budget.py --measured BUILD   after a run of scripts/test.sh: measured against the budget
    python3 tests/suite_budget.py --rows BUILD       rows for tests/suite_budget.tsv from BUILD/ctest.xml (a cold run)

tests/suite_budget.tsv holds, tab-separated (docs/testing.md, "The budget"):
- ``budget NAME SECONDS - WHAT``: the limits: ``command`` (the README test command, cold, 2 cores), ``setup``, and one
  per phase of scripts/test.sh (the names it prints; ``test: ctest`` is not one: it is predicted from the rows);
- ``quick quick SECONDS main WHAT``: the `quick` label's tests together, in test-seconds;
- ``test NAME SECONDS TIER SHARES``: every ctest without the `quick` label: its cold cost (test-seconds, measured on
  the 2-core machine), its tier (``main``: scripts/test.sh, the README command and CI; ``extended``: only
  ``scripts/test.sh --extended``, each moved by a decision written in docs/testing.md) and what it shares with
  other tests (a compile paid once, a run judged once; ``-`` for nothing).

--check (no test is run; it reads ctest's list of tests of BUILD and the file) fails when a test that is not `quick`
has no row (a new test says what it costs and what it shares), a row names no test, a tier is unknown, or the main
tier's predicted ctest wall time, (its rows + quick) / 2 cores, with the phases' budgets, exceeds the command's
budget. The figures are what a cold run measured, not a timing taken by the test: how long a test takes on a given
day is for --measured to print, never for a test to fail on.

tests/CMakeLists.txt reads the same file: the `extended` label from the tier, and ctest's cost data (longest first)
from the seconds.
"""
import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET = os.path.join(HERE, "suite_budget.tsv")
CORES = 2
TIERS = ("main", "extended")


def read_budget(path=BUDGET):
    """(budgets {name: seconds}, quick seconds, rows {test: (seconds, tier, shares)}); raises ValueError on a bad line."""
    budgets, quick, rows = {}, 0.0, {}
    for number, line in enumerate(open(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 5:
            raise ValueError(f"{path}:{number}: 5 tab-separated columns (kind, name, seconds, tier, what), not {len(parts)}")
        kind, name, seconds, tier, what = parts
        if ";" in line:
            raise ValueError(f"{path}:{number}: no ';' in a row (CMake reads the file as a list)")
        seconds = float(seconds)
        if kind == "budget":
            budgets[name] = seconds
        elif kind == "quick":
            quick = seconds
        elif kind == "test":
            if tier not in TIERS:
                raise ValueError(f"{path}:{number}: tier '{tier}' of {name}: one of {', '.join(TIERS)}")
            if name in rows:
                raise ValueError(f"{path}:{number}: {name} has two rows")
            rows[name] = (seconds, tier, what)
        else:
            raise ValueError(f"{path}:{number}: kind '{kind}': budget, quick or test")
    return budgets, quick, rows


def ctest_tests(build):
    """{name: labels} of the tests ctest knows in BUILD (ctest --show-only=json-v1)."""
    p = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"ctest --show-only in {build} failed: {p.stderr.strip()[-300:]}")
    out = {}
    for t in json.loads(p.stdout)["tests"]:
        labels = next((prop["value"] for prop in t.get("properties", []) if prop["name"] == "LABELS"), [])
        out[t["name"]] = labels
    return out


def prediction(budgets, quick, rows):
    """(the main tier's test-seconds, its predicted ctest wall seconds, the predicted command seconds)."""
    main = sum(s for s, tier, _ in rows.values() if tier == "main") + quick
    wall = main / CORES
    phases = sum(v for k, v in budgets.items() if k.startswith("test: "))
    return main, wall, phases + wall


def check(build):
    budgets, quick, rows = read_budget()
    tests = ctest_tests(build)
    problems = []
    for name, labels in sorted(tests.items()):
        if name.endswith("_NOT_BUILT"):
            problems.append(f"{name}: build the test binaries first (cmake --build {build})")
        elif "quick" not in labels and name not in rows:
            problems.append(f"{name} has no row in tests/suite_budget.tsv: run it cold, then add "
                            f"'test<TAB>{name}<TAB>SECONDS<TAB>main|extended<TAB>what it shares' "
                            "(python3 tests/suite_budget.py --rows BUILD writes the row from a run)")
        elif "quick" in labels and name in rows:
            problems.append(f"{name} is quick: its cost is in the quick row, not a row of its own")
    for name in sorted(set(rows) - set(tests)):
        problems.append(f"tests/suite_budget.tsv names {name}, which is no test of {build}: remove its row")
    for needed in ("command", "setup"):
        if needed not in budgets:
            problems.append(f"tests/suite_budget.tsv has no 'budget {needed}' row")
    main, wall, command = prediction(budgets, quick, rows)
    extended = sum(s for s, tier, _ in rows.values() if tier == "extended")
    print(f"main tier: {sum(1 for r in rows.values() if r[1] == 'main')} tests + quick ({quick:.0f} s): {main:.0f} "
          f"test-seconds, about {wall:.0f} s of ctest on {CORES} cores; with the phases' budgets the README test command "
          f"is predicted at {command:.0f} s (budget {budgets.get('command', 0):.0f} s)")
    print(f"extended tier (scripts/test.sh --extended): {sum(1 for r in rows.values() if r[1] == 'extended')} tests, "
          f"{extended:.0f} test-seconds more")
    if "command" in budgets and command > budgets["command"]:
        problems.append(f"the main tier does not fit: predicted {command:.0f} s against the command's budget "
                        f"{budgets['command']:.0f} s: share a compile or a run, or move a test by a decision "
                        "written in docs/testing.md")
    for p in problems:
        print("suite_budget: " + p, file=sys.stderr)
    return 1 if problems else 0


def junit_times(build):
    """{test: seconds} from BUILD/ctest.xml (scripts/test.sh has ctest write it)."""
    path = os.path.join(build, "ctest.xml")
    if not os.path.exists(path):
        return {}
    return {tc.get("name"): float(tc.get("time") or 0) for tc in ET.parse(path).getroot().iter("testcase")}


def measured(build):
    """Prints the run of BUILD against the budget: the phases, the tiers, and each test well over its row."""
    budgets, quick, rows = read_budget()
    times = junit_times(build)
    phases = []
    path = os.path.join(build, "phases.tsv")
    if os.path.exists(path):
        phases = [(p[0], float(p[1])) for p in (line.rstrip("\n").split("\t") for line in open(path)) if len(p) >= 2]
    print("| phase | measured (s) | budget (s) |\n|---|---|---|")
    setup = sum(s for n, s in phases if n.startswith("setup: "))
    if setup:
        print(f"| set-up (setup.sh's phases) | {setup:.0f} | {budgets.get('setup', 0):.0f} (cold) |")
    for name, seconds in phases:
        if name.startswith("test: "):
            limit = budgets.get(name)
            if name == "test: ctest":
                limit = prediction(budgets, quick, rows)[1]
            print(f"| {name} | {seconds:.0f} | {'-' if limit is None else f'{limit:.0f}'} |")
    total = sum(s for n, s in phases if n.startswith("test: "))
    print(f"| **the test command after set-up** | **{total:.0f}** | **{budgets.get('command', 0):.0f}** |")
    if not times:
        return 0
    ran = times
    quick_seconds = sum(t for n, t in ran.items() if n not in rows)
    main_seconds = sum(t for n, t in ran.items() if n in rows and rows[n][1] == "main")
    ext_seconds = sum(t for n, t in ran.items() if n in rows and rows[n][1] == "extended")
    print(f"\nctest: quick {quick_seconds:.0f} test-seconds (row {quick:.0f}), main {main_seconds:.0f} "
          f"(rows {sum(s for n, (s, t, _) in rows.items() if t == 'main' and n in ran):.0f})"
          + (f", extended {ext_seconds:.0f}" if ext_seconds else ""))
    over = [(n, t, rows[n][0]) for n, t in ran.items() if n in rows and t > 1.5 * rows[n][0] and t - rows[n][0] > 10]
    for n, t, s in sorted(over, key=lambda x: x[2] - x[1]):
        print(f"  over its row: {n} {t:.0f} s against {s:.0f} s (a slower machine, or a test that grew: measure it cold)")
    return 0


def rows_from_run(build):
    """Rows for the tests of BUILD/ctest.xml not in the file yet (their tier main, what they share to be said)."""
    _, _, rows = read_budget()
    labels, times = ctest_tests(build), junit_times(build)
    for name, seconds in sorted(times.items(), key=lambda x: -x[1]):
        if name not in rows and "quick" not in labels.get(name, []):
            print(f"test\t{name}\t{seconds:.1f}\tmain\t-")
    quick = sum(t for n, t in times.items() if "quick" in labels.get(n, []))
    print(f"quick\tquick\t{quick:.0f}\tmain\tthe quick label's tests together, this run")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", metavar="BUILD")
    group.add_argument("--measured", metavar="BUILD")
    group.add_argument("--rows", metavar="BUILD")
    a = ap.parse_args()
    try:
        if a.check:
            return check(a.check)
        if a.measured:
            return measured(a.measured)
        return rows_from_run(a.rows)
    except (ValueError, RuntimeError, OSError) as e:
        print(f"suite_budget: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
