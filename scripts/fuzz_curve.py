#!/usr/bin/env python3
"""The coverage curve of a fuzz campaign (scripts/fuzz.sh --seconds S), from libFuzzer's (or atheris's) log.

    ... | fuzz_curve.py stamp > LOG        prefixes each line with the seconds since the campaign started
    fuzz_curve.py table LOG [LOG...]       per log: executions, coverage (libFuzzer's cov: and ft:) at its
                                           start and at 1, 5, 10, 20, 30, 45, 60, 90, 120... minutes, findings

The table is what docs/security.md records for each campaign; a curve still rising at its last rows says
the campaign was too short.
"""
import os
import re
import sys
import time

STAT = re.compile(r"^\s*([\d.]+) #(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)")
MINUTES = (1, 5, 10, 20, 30, 45, 60, 90, 120, 180, 240, 360, 480)


def stamp():
    start = time.time()
    for line in sys.stdin:
        sys.stdout.write(f"{time.time() - start:9.1f} {line}")
        sys.stdout.flush()


def curve(path):
    """[(seconds, executions, cov, ft)] and the findings (crash/leak/timeout lines) of one stamped log."""
    points, findings, why = [], [], ""
    with open(path, errors="replace") as f:
        for line in f:
            m = STAT.match(line)
            if m:
                points.append((float(m.group(1)), int(m.group(2)), int(m.group(4)), int(m.group(5))))
            else:
                # One finding per unit written (crash-, leak-, timeout-, oom-; slow units are not findings),
                # named by the sanitizer's or Python's summary line just before it.
                m = re.search(r"Test unit written to (\S*/)?((crash|leak|timeout|oom)-\w+)", line)
                if re.search(r"SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)|Uncaught Python exception|"
                             r"not a pt2diff::Error|ERROR: libFuzzer: (timeout|out-of-memory)", line):
                    why = line.split(" ", 1)[-1].strip()
                elif m and m.group(2) not in {f[0] for f in findings}:
                    findings.append((m.group(2), why))
    return points, [f"{unit}: {why}" for unit, why in findings]


def table(paths):
    for path in paths:
        points, findings = curve(path)
        name = os.path.basename(path).split(".")[0]
        if not points:
            print(f"{name}: no coverage lines in {path}")
            continue
        end = points[-1]
        print(f"{name}: {end[0] / 3600:.2f} h, {end[1]:,} executions ({end[1] / max(end[0], 1):.0f}/s), "
              f"cov {points[0][2]} -> {end[2]}, ft {points[0][3]} -> {end[3]}, findings {len(findings)}")
        print("  minute   executions    cov     ft")
        print(f"  {'start':>6} {points[0][1]:>12,} {points[0][2]:>6} {points[0][3]:>6}")
        for minute in MINUTES:
            if minute * 60 > end[0]:
                break
            at = [p for p in points if p[0] <= minute * 60][-1]
            print(f"  {minute:>6} {at[1]:>12,} {at[2]:>6} {at[3]:>6}")
        print(f"  {'end':>6} {end[1]:>12,} {end[2]:>6} {end[3]:>6}")
        for f in findings[:10]:
            print("  finding:", f)


if __name__ == "__main__":
    if sys.argv[1:2] == ["stamp"]:
        stamp()
    elif sys.argv[1:2] == ["table"] and len(sys.argv) > 2:
        table(sys.argv[2:])
    else:
        sys.exit(__doc__)
