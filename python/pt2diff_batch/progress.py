"""The corpus's progress line on a terminal: cases done/failed/running and an ETA; nothing in a pipe."""
import sys
import threading
import time


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """`total` cases to run (those skipped by --resume are not counted). enabled: None for "stream is a tty"."""

    def __init__(self, total, stream=None, enabled=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = total
        self.done = self.failed = self.running = 0
        self.start = time.monotonic()
        self._lock = threading.Lock()
        self._width = 0

    def started(self, _case=None):
        with self._lock:
            self.running += 1
            self._draw()

    def finished(self, failed):
        with self._lock:
            self.running = max(0, self.running - 1)
            self.done += 1
            self.failed += bool(failed)
            self._draw()

    def line(self):
        """The progress line: 'batch: 12/40 done (2 failed), 2 running, 31s elapsed, ETA 1m30s'."""
        elapsed = time.monotonic() - self.start
        eta = f", ETA {_duration(elapsed / self.done * (self.total - self.done))}" if 0 < self.done < self.total else ""
        return (f"batch: {self.done}/{self.total} done ({self.failed} failed), {self.running} running, "
                f"{_duration(elapsed)} elapsed{eta}")

    def _draw(self):
        if not self.enabled:
            return
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def clear(self):
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
