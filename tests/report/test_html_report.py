"""The HTML report of a localized divergence. A ctest, label report (tests/cli_case.py says how to run it alone).

Runs a planted fault (bf16 rounding in the second bmm of attention_core: localized, with hints, no
compiler, well under a second), writes --html and --json, and checks the page:
  * self-contained: no <link>, no <script>, no src= other than data:, no url() other than #fragment,
    no http(s): other than the SVG namespace name;
  * it names the culprit node and every hint finding of the JSON report, and has both SVGs;
  * in headless Chromium: the DOM has the error profile and the DAG, the console is silent, and a
    screenshot of the error profile shows the three series colours inside one plot-sized region
    (the PNG is decoded here with zlib: no PIL).
The browser's tests are skipped where chromium is not installed (or cannot render a page); the page's own run anyway.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cli_case import CliTestCase  # noqa: E402

# The error profile's series colours (engine/report/html_report.cpp).
SERIES = {"compiled local": (0xD6, 0x33, 0x6C), "eager local": (0x1C, 0x7E, 0xD6), "eager propagated": (0x2B, 0x8A, 0x3E)}
FAULT = "fault:aten.bmm#2:bf16"


def require(condition, message):
    if not condition:
        raise AssertionError(message)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(binary, args, timeout=120):
    base = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            "--no-first-run", "--disable-background-networking", "--disable-extensions", "--enable-logging=stderr", "--v=0"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=timeout)


def read_png(path):
    """(width, height, bytes per pixel, rows of bytes) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = open(path, "rb").read()
    require(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
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
    require(depth == 8 and color in (2, 6) and interlace == 0, f"PNG depth {depth} colour type {color} interlace {interlace}")
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
            raise AssertionError(f"PNG filter type {ftype}")
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


def console_messages(run):
    return [line for line in run.stderr.splitlines() if "CONSOLE" in line]


class HtmlReport(CliTestCase):
    """One pt2diff run writing --html and --json, in setUpClass, then (where chromium works) the page's DOM dumped and
    a screenshot taken by headless Chromium."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        out, js = os.path.join(cls.tmp, "report.html"), os.path.join(cls.tmp, "report.json")
        graph, inputs = os.path.join(cls.fixtures, "attention_core.pt2"), os.path.join(cls.fixtures, "attention_inputs.pt")
        run = subprocess.run([cls.cli, graph, inputs, "--compiled", FAULT, "--html", out, "--json", js],
                             capture_output=True, text=True, timeout=300)
        cls.exit_code, cls.said = run.returncode, f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        cls.html = open(out, encoding="utf-8").read() if os.path.exists(out) else None
        cls.report = json.load(open(js)) if os.path.exists(js) else None
        cls.no_browser = cls.browser_problem()
        if cls.no_browser:
            return
        url = "file://" + out
        cls.shot = os.path.join(cls.tmp, "page.png")
        cls.dom_run = browser(cls.binary, ["--dump-dom", url])
        # A window tall enough for the page down to the error profile (headless screenshots do not
        # follow a #fragment reliably).
        cls.shot_run = browser(cls.binary, [f"--screenshot={cls.shot}", "--window-size=1280,4000", url])

    @classmethod
    def browser_problem(cls):
        """Why the browser's tests are skipped, or None: chromium is missing, or cannot render even a data: URL (a snap
        stub, a sandbox without /dev/shm), which is the machine's problem, not the report's."""
        cls.binary = chromium()
        if not cls.binary:
            return "chromium not installed: apt-get install chromium; skipping the browser check"
        try:
            p = browser(cls.binary, ["--dump-dom", "data:text/html,<p id=probe>ok</p>"], timeout=60)
            works = p.returncode == 0 and 'id="probe"' in p.stdout
        except (OSError, subprocess.TimeoutExpired):
            p, works = None, False
        if works:
            return None
        why = p.stderr.strip().splitlines()[-1:] if p is not None else ["it did not answer within 60 s"]
        return f"{cls.binary} cannot render a data: URL ({' '.join(why)[:300]}); skipping the browser check"

    def setUp(self):
        self.assertTrue(self.html is not None and self.report is not None,
                        f"no --html or --json written: exit {self.exit_code}\n{self.said}")

    def need_browser(self):
        if self.no_browser:
            self.skipTest(self.no_browser)

    def test_diverged(self):
        self.assertEqual(self.exit_code, 1, f"exit {self.exit_code} (want 1: diverged)\n{self.said}")

    def test_self_contained(self):
        """No URL, <link>, <script>, @import, src= or url() that would fetch anything."""
        html = self.html
        no_ns = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
        self.assertIsNone(re.search(r"https?:", no_ns), "a URL other than the SVG namespace name")
        self.assertIsNone(re.search(r"<link\b", html, re.I), "a <link> element")
        self.assertIsNone(re.search(r"<script\b", html, re.I), "a <script> element")
        self.assertIsNone(re.search(r"@import", html), "a CSS @import")
        for src in re.findall(r"\bsrc\s*=\s*[\"']?([^\"' >]*)", html, re.I):
            self.assertTrue(src.startswith("data:"), f"src={src}")
        for url in re.findall(r"url\(\s*[\"']?([^\"')]*)", html):
            self.assertTrue(url.startswith("#") or url.startswith("data:"), f"url({url})")

    def test_culprit_localized(self):
        """The JSON report's culprit is the single op bmm_1."""
        culprit = self.report["localization"]["culprit"]
        self.assertTrue(culprit["kind"] == "single_op" and culprit["nodes"] == ["bmm_1"],
                        f"culprit {culprit['kind']} {culprit['nodes']}")

    def test_names_the_culprit(self):
        self.assertTrue(">bmm_1<" in self.html, "the culprit node bmm_1 is not named")

    def test_names_every_hint_finding(self):
        findings = [h["finding"] for h in self.report["localization"]["hints"]]
        self.assertTrue(findings, "the JSON report has no hints")
        for f in findings:
            with self.subTest(finding=f):
                self.assertTrue(f in self.html, f"hint finding {f} missing")

    def test_has_its_sections(self):
        """The error profile, the culprit's DAG, the probes, the node table and collapsible details."""
        for marker in ('id="error-profile"', 'id="culprit-dag"', 'id="probes"', 'id="nodes"', "<details"):
            with self.subTest(marker=marker):
                self.assertTrue(marker in self.html, f"{marker} missing")

    def test_shows_the_command_line(self):
        self.assertTrue("--html" in self.html and FAULT in self.html, "the command line of the run is not shown")

    def test_dom_has_both_svgs(self):
        """In Chromium's DOM: svg#error-profile with its lines, and svg#culprit-dag."""
        self.need_browser()
        p = self.dom_run
        self.assertEqual(p.returncode, 0, f"chromium --dump-dom exit {p.returncode}: {p.stderr[-2000:]}")
        self.assertTrue(re.search(r'<svg[^>]*id="error-profile"', p.stdout), "the DOM has no svg#error-profile")
        self.assertTrue(re.search(r'<svg[^>]*id="culprit-dag"', p.stdout), "the DOM has no svg#culprit-dag")
        self.assertGreaterEqual(p.stdout.count("<polyline"), 2, "the error profile has no lines")

    def test_dom_console_is_silent(self):
        self.need_browser()
        console = console_messages(self.dom_run)
        self.assertFalse(console, "console messages:\n" + "\n".join(console))

    def test_screenshot_console_is_silent(self):
        self.need_browser()
        console = console_messages(self.shot_run)
        self.assertFalse(console, "console messages:\n" + "\n".join(console))

    def test_screenshot_shows_the_error_profile(self):
        """The three series colours, each across the graph, inside one plot-sized region."""
        self.need_browser()
        p = self.shot_run
        self.assertTrue(p.returncode == 0 and os.path.exists(self.shot),
                        f"chromium --screenshot exit {p.returncode}: {p.stderr[-2000:]}")
        boxes = colour_boxes(*read_png(self.shot))
        for name, (n, x0, y0, x1, y1) in boxes.items():
            with self.subTest(series=name):
                self.assertGreaterEqual(n, 30, f"the screenshot has {n} pixels of the {name} colour")
                self.assertGreaterEqual(x1 - x0, 400, f"the {name} series spans only {x1 - x0} px: not a plot across the graph")
        top = max(b[2] for b in boxes.values())
        bottom = min(b[4] for b in boxes.values())
        self.assertLess(top, bottom, f"the three series are not in one plot (their vertical extents do not overlap): {boxes}")
        union = (min(b[1] for b in boxes.values()), min(b[2] for b in boxes.values()),
                 max(b[3] for b in boxes.values()), max(b[4] for b in boxes.values()))
        self.assertTrue(union[3] - union[1] <= 480 and union[2] - union[0] <= 1200,
                        f"the series spread over {union}: larger than the plot")


if __name__ == "__main__":
    unittest.main()
