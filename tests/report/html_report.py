"""tests/report/html_report.py PT2DIFF FIXTURES_DIR — the HTML report of a localized divergence.

Runs a planted fault (bf16 rounding in the second bmm of attention_core: localized, with hints, no
compiler, well under a second), writes --html and --json, and checks the page:
  * self-contained: no <link>, no <script>, no src= other than data:, no url() other than #fragment,
    no http(s): other than the SVG namespace name;
  * it names the culprit node and every hint finding of the JSON report, and has both SVGs;
  * in headless Chromium: the DOM has the error profile and the DAG, the console is silent, and a
    screenshot of the error profile shows the three series colours inside one plot-sized region
    (the PNG is decoded here with zlib: no PIL).
Exit 77 (skipped) when chromium is not installed.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

# The error profile's series colours (engine/report/html_report.cpp).
SERIES = {"compiled local": (0xD6, 0x33, 0x6C), "eager local": (0x1C, 0x7E, 0xD6), "eager propagated": (0x2B, 0x8A, 0x3E)}
FAULT = "fault:aten.bmm#2:bf16"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def static_checks(html, report):
    no_ns = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    check(not re.search(r"https?:", no_ns), "a URL other than the SVG namespace name")
    check(not re.search(r"<link\b", html, re.I), "a <link> element")
    check(not re.search(r"<script\b", html, re.I), "a <script> element")
    check(not re.search(r"@import", html), "a CSS @import")
    for src in re.findall(r"\bsrc\s*=\s*[\"']?([^\"' >]*)", html, re.I):
        check(src.startswith("data:"), f"src={src}")
    for url in re.findall(r"url\(\s*[\"']?([^\"')]*)", html):
        check(url.startswith("#") or url.startswith("data:"), f"url({url})")
    culprit = report["localization"]["culprit"]
    check(culprit["kind"] == "single_op" and culprit["nodes"] == ["bmm_1"], f"culprit {culprit['kind']} {culprit['nodes']}")
    check(">bmm_1<" in html, "the culprit node bmm_1 is not named")
    findings = [h["finding"] for h in report["localization"]["hints"]]
    check(findings, "the JSON report has no hints")
    for f in findings:
        check(f in html, f"hint finding {f} missing")
    for marker in ('id="error-profile"', 'id="culprit-dag"', 'id="probes"', 'id="nodes"', "<details"):
        check(marker in html, f"{marker} missing")
    print(f"static checks passed: {len(html)} bytes, culprit bmm_1, findings {', '.join(findings)}")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(binary, args, timeout=120):
    base = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--no-first-run",
            "--disable-background-networking", "--disable-extensions", "--enable-logging=stderr", "--v=0"]
    t0 = time.time()
    p = subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)
    return p, time.time() - t0


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    check(depth == 8 and color in (2, 6) and interlace == 0, f"PNG depth {depth} colour type {color} interlace {interlace}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        elif ftype != 0:
            fail(f"PNG filter type {ftype}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def colour_boxes(width, height, bpp, rows, tolerance=8):
    """Per series colour: (pixel count, x0, y0, x1, y1) of the pixels within `tolerance` of it."""
    found = {}
    for name, (r0, g0, b0) in SERIES.items():
        n, x0, y0, x1, y1 = 0, width, height, -1, -1
        for y, row in enumerate(rows):
            for x in range(width):
                i = x * bpp
                if abs(row[i] - r0) <= tolerance and abs(row[i + 1] - g0) <= tolerance and abs(row[i + 2] - b0) <= tolerance:
                    n += 1
                    x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
        found[name] = (n, x0, y0, x1, y1)
    return found


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        out, js = os.path.join(tmp, "report.html"), os.path.join(tmp, "report.json")
        t0 = time.time()
        p = subprocess.run([pt2diff, os.path.join(fixtures, "attention_core.pt2"), os.path.join(fixtures, "attention_inputs.pt"),
                            "--compiled", FAULT, "--html", out, "--json", js], capture_output=True, text=True, timeout=300)
        seconds = time.time() - t0
        check(p.returncode == 1, f"exit {p.returncode} (want 1: diverged)\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        html = open(out, encoding="utf-8").read()
        report = json.load(open(js))
        print(f"pt2diff ran in {seconds:.2f} s")
        static_checks(html, report)
        check("--html" in html and FAULT in html, "the command line of the run is not shown")

        binary = chromium()
        if not binary:
            print("chromium not installed: apt-get install chromium; skipping the browser check")
            return 77
        # A chromium that cannot render even a data: URL (a snap stub, a sandbox without /dev/shm) is the
        # machine's problem, not the report's: skip, saying why.
        try:
            p, _ = browser(binary, ["--dump-dom", "data:text/html,<p id=probe>ok</p>"], timeout=60)
            works = p.returncode == 0 and 'id="probe"' in p.stdout
        except (OSError, subprocess.TimeoutExpired):
            p, works = None, False
        if not works:
            why = p.stderr.strip().splitlines()[-1:] if p is not None else ["it did not answer within 60 s"]
            print(f"{binary} cannot render a data: URL ({' '.join(why)[:300]}); skipping the browser check")
            return 77
        url = "file://" + out
        p, took = browser(binary, ["--dump-dom", url])
        check(p.returncode == 0, f"chromium --dump-dom exit {p.returncode}: {p.stderr[-2000:]}")
        dom = p.stdout
        check(re.search(r'<svg[^>]*id="error-profile"', dom), "the DOM has no svg#error-profile")
        check(re.search(r'<svg[^>]*id="culprit-dag"', dom), "the DOM has no svg#culprit-dag")
        check(dom.count("<polyline") >= 2, "the error profile has no lines")
        console = [line for line in p.stderr.splitlines() if "CONSOLE" in line]
        check(not console, "console messages:\n" + "\n".join(console))
        print(f"dom checks passed ({took:.1f} s): svg#error-profile, svg#culprit-dag, no console messages")

        # A window tall enough for the page down to the error profile (headless screenshots do not
        # follow a #fragment reliably).
        shot = os.path.join(tmp, "page.png")
        p, took = browser(binary, [f"--screenshot={shot}", "--window-size=1280,4000", url])
        check(p.returncode == 0 and os.path.exists(shot), f"chromium --screenshot exit {p.returncode}: {p.stderr[-2000:]}")
        console = [line for line in p.stderr.splitlines() if "CONSOLE" in line]
        check(not console, "console messages:\n" + "\n".join(console))
        width, height, bpp, rows = read_png(shot)
        boxes = colour_boxes(width, height, bpp, rows)
        for name, (n, x0, y0, x1, y1) in boxes.items():
            print(f"  {name:<17} {n:>5} px in x {x0}..{x1}, y {y0}..{y1}")
            check(n >= 30, f"the screenshot has {n} pixels of the {name} colour")
            check(x1 - x0 >= 400, f"the {name} series spans only {x1 - x0} px: not a plot across the graph")
        top = max(b[2] for b in boxes.values())
        bottom = min(b[4] for b in boxes.values())
        check(top < bottom, "the three series are not in one plot (their vertical extents do not overlap)")
        union = (min(b[1] for b in boxes.values()), min(b[2] for b in boxes.values()),
                 max(b[3] for b in boxes.values()), max(b[4] for b in boxes.values()))
        check(union[3] - union[1] <= 480 and union[2] - union[0] <= 1200, f"the series spread over {union}: larger than the plot")
        print(f"screenshot checks passed ({took:.1f} s): {width}x{height}, the series inside x {union[0]}..{union[2]}, y {union[1]}..{union[3]}")
    print("html report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
