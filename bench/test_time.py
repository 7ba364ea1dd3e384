#!/usr/bin/env python3
"""Where the set-up's and the test command's time goes (issue 30; the tables in docs/testing.md).

    python3 bench/test_time.py BUILD_DIR [--top N] [--costs FILE]

Reads what a run of scripts/test.sh leaves behind, nothing else (it runs nothing):
- BUILD_DIR/phases.tsv: each phase of setup.sh and test.sh (apt, venv, configure, build, ctest, fuzz,
  sanitizer build, ...) and its wall seconds, appended by the scripts as they go;
- BUILD_DIR/.ninja_log (and BUILD_DIR-sanitize/.ninja_log): each object's compile or link time, summed per
  target (the `CMakeFiles/TARGET.dir/` of its path), with the slowest objects;
- BUILD_DIR/ctest.xml (and BUILD_DIR-sanitize/ctest.xml): ctest's JUnit file (test.sh passes
  --output-junit): each test's seconds and labels, summed per label, with the slowest tests.

With --costs FILE it also writes BUILD_DIR/ctest.xml's tests of 10 s or more in ctest's cost format (name,
runs, seconds; longest first). The suite's costs live in tests/suite_budget.tsv now: `python3 tests/suite_budget.py
--rows BUILD_DIR` writes its rows from a cold run's build tree.

Prints markdown tables. Only the last build of each object counts (.ninja_log keeps one line per output and
run; a rebuild of an object replaces its earlier time). Times of a parallel build and of `ctest -j2` are
per job: their sums are CPU-side seconds (two at a time on 2 cores), the phase table is the wall clock.
"""
import argparse
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET


def phases(build):
    path = os.path.join(build, "phases.tsv")
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 2:
            rows.append((parts[0], float(parts[1])))
    return rows


def ninja_objects(build):
    """{output: seconds} of the last build of each output in BUILD/.ninja_log."""
    path = os.path.join(build, ".ninja_log")
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        if line.startswith("#"):
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 4:
            continue
        start, end, _, output = int(parts[0]), int(parts[1]), parts[2], parts[3]
        out[output] = (end - start) / 1000.0
    return out


def target_of(output):
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
    if m:
        return m.group(1)
    return "link: " + os.path.basename(output)


def junit(build):
    path = os.path.join(build, "ctest.xml")
    if not os.path.exists(path):
        return []
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        labels = ""
        for prop in case.iter("property"):
            if prop.get("name") == "cmake_labels":
                labels = prop.get("value") or ""
        tests.append((case.get("name"), float(case.get("time") or 0), [l for l in labels.split(";") if l], case.get("status")))
    return tests


def sum_by(items):
    """{key: [count, seconds]} of (key, seconds) pairs."""
    per = collections.defaultdict(lambda: [0, 0.0])
    for key, seconds in items:
        per[key][0] += 1
        per[key][1] += seconds
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--costs", metavar="FILE", help="write the tests of 10 s or more in ctest's cost format")
    a = ap.parse_args()
    builds = [b for b in (a.build, a.build.rstrip("/") + "-sanitize") if os.path.isdir(b)]

    rows = phases(a.build)
    if rows:
        print("| phase | wall s |\n|---|---|")
        for name, seconds in rows:
            print(f"| {name} | {seconds:.0f} |")
        print()

    for build in builds:
        objects = ninja_objects(build)
        if not objects:
            continue
        per = sum_by((target_of(output), seconds) for output, seconds in objects.items())
        print(f"Build {os.path.basename(build)}: {len(objects)} outputs, {sum(objects.values()):.0f} s of compile and link jobs\n")
        print("| target | objects | job seconds |\n|---|---|---|")
        for target, (n, seconds) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            if seconds >= 1:
                print(f"| {target} | {n} | {seconds:.0f} |")
        print(f"\nThe {a.top} slowest:\n\n| object | seconds |\n|---|---|")
        for output, seconds in sorted(objects.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"| {output} | {seconds:.1f} |")
        print()

    for build in builds:
        tests = junit(build)
        if not tests:
            continue
        per = sum_by((label, seconds) for _, seconds, labels, _ in tests for label in labels or ["(none)"])
        total = sum(t[1] for t in tests)
        print(f"ctest in {os.path.basename(build)}: {len(tests)} tests, {total:.0f} s of test time "
              f"(a test with several labels counts under each)\n")
        print("| label | tests | seconds |\n|---|---|---|")
        for label, (n, seconds) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            print(f"| {label} | {n} | {seconds:.0f} |")
        print(f"\nThe {a.top} slowest:\n\n| test | labels | seconds |\n|---|---|---|")
        for name, seconds, labels, status in sorted(tests, key=lambda t: -t[1])[:a.top]:
            print(f"| {name} | {';'.join(labels)} | {seconds:.0f} |")
        print()
    if a.costs:
        tests = sorted(junit(a.build), key=lambda t: -t[1])
        with open(a.costs, "w") as f:
            f.writelines(f"{name} 1 {seconds:.1f}\n" for name, seconds, _, _ in tests if seconds >= 10)
        print(f"{a.costs}: {sum(t[1] >= 10 for t in tests)} tests of 10 s or more", file=sys.stderr)
    if not rows and not builds:
        print(f"test_time.py: nothing measured under {a.build} (run scripts/test.sh first)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
