"""The output directory of a batch, what is finished in it, and how a finished case lands there.

    DIR/batch.json                 what the batch was asked (sources, options): --resume checks it
    DIR/cases/KEY/row.json         a finished case's row: written last, atomically; its presence means done
    DIR/cases/KEY/report.json|html its pt2diff reports (also stdout.txt, stderr.txt, inspect.json)
    DIR/cases/KEY/run.json         where and when its last run was: pid, host, the diff's start and end, its GPU
    DIR/cases/KEY/runs.jsonl       one line per time the case was started (pid, host, time)
    DIR/cases/KEY/attempt-*/       a case being run; left behind by an interrupted run, removed by --resume
    DIR/inductor-cache/            the Inductor cache every case shares
    DIR/summary.{txt,json,csv}, DIR/index.html
"""
import json
import os
import shutil

PUBLISHED = ("report.json", "report.html", "stdout.txt", "stderr.txt", "inspect.json", "inspect_stderr.txt", "run.json")


class StoreError(Exception):
    """An output directory that cannot be used as asked: one line for the user."""


def write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Store:
    def __init__(self, out):
        self.out = os.path.abspath(out)
        self.cases_dir = os.path.join(self.out, "cases")
        self.cache_dir = os.path.join(self.out, "inductor-cache")

    def open(self, request, resume):
        """Creates DIR or, with `resume`, continues the batch in it. `request` (sources, options) must be that
        of the batch being resumed; without `resume` DIR must not hold one already."""
        meta = os.path.join(self.out, "batch.json")
        if os.path.exists(meta):
            if not resume:
                raise StoreError(f"{self.out} already holds a batch run: pass --resume to finish it, or choose another --out")
            try:
                with open(meta) as f:
                    old = json.load(f)
            except (OSError, ValueError) as e:
                raise StoreError(f"{meta} is unreadable ({e}): choose another --out") from None
            if old != request:
                raise StoreError(f"{self.out} holds a batch of other sources or options ({json.dumps(old)[:200]}): "
                                 "rerun with those, or choose another --out")
        elif os.path.isdir(self.out) and os.listdir(self.out) and not resume:
            raise StoreError(f"{self.out} exists and is not empty: choose another --out")
        os.makedirs(self.cases_dir, exist_ok=True)
        os.makedirs(self.cache_dir, exist_ok=True)
        write_atomic(meta, json.dumps(request, indent=1) + "\n")
        if resume:
            self._remove_attempts()

    def _remove_attempts(self):
        """Attempts of cases an interrupted run had started and not finished: they are run again."""
        for key in os.listdir(self.cases_dir):
            folder = os.path.join(self.cases_dir, key)
            for name in os.listdir(folder) if os.path.isdir(folder) else []:
                if name.startswith("attempt-"):
                    shutil.rmtree(os.path.join(folder, name), ignore_errors=True)

    def case_dir(self, key):
        return os.path.join(self.cases_dir, key)

    def finished(self, key):
        """The row of a finished case, or None."""
        try:
            with open(os.path.join(self.case_dir(key), "row.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def start_attempt(self, key, run):
        """A fresh work directory for one run of case `key`; `run` (pid, host, time) is logged to runs.jsonl."""
        folder = self.case_dir(key)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "runs.jsonl"), "a") as f:
            f.write(json.dumps(run) + "\n")
        attempt = os.path.join(folder, f"attempt-{os.getpid()}-{run['started']:.6f}")
        os.makedirs(attempt)
        return attempt

    def publish(self, key, attempt, row, files=None):
        """Moves an attempt's reports into the case's directory, adds their paths to `row` and writes row.json
        (last: a case with row.json is finished). `files` ({name: bytes}) are written first (a Ray task's)."""
        folder = self.case_dir(key)
        for name, data in (files or {}).items():
            with open(os.path.join(attempt, name), "wb") as f:
                f.write(data)
        for name in PUBLISHED:
            src, dst = os.path.join(attempt, name), os.path.join(folder, name)
            if os.path.exists(src):
                os.replace(src, dst)
            elif os.path.exists(dst):  # left by an attempt that was interrupted before its row.json
                os.remove(dst)
        rel = os.path.relpath(folder, self.out)
        row = dict(row)
        row["report_json"] = os.path.join(rel, "report.json") if os.path.exists(os.path.join(folder, "report.json")) else None
        row["report_html"] = os.path.join(rel, "report.html") if os.path.exists(os.path.join(folder, "report.html")) else None
        row["case_dir"] = rel
        write_atomic(os.path.join(folder, "row.json"), json.dumps(row, indent=1) + "\n")
        shutil.rmtree(attempt, ignore_errors=True)
        return row
