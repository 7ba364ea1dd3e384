#!/usr/bin/env python3
"""`pt2diff batch --ray` on a local Ray instance started here (2 CPUs) gives the summary of the local run
(run by ctest; skipped, exit 77, when ray is not installed in this Python).

    batch_ray.py PT2DIFF

13 fixture cases (eager, planted faults, an unsupported op, two through Inductor) run with `--jobs 2`, then
as Ray tasks reading the paths, then as Ray tasks with the files shipped through the object store: the
three summaries are equal but for the fields that legitimately differ (timings, executor:
pt2diff_batch.summary.comparable). One Ray start for the whole file, and one Inductor cache for the three runs'
Inductor cases (the first run compiles, the others reuse).
"""
import os
import shutil
import sys
import tempfile
import time

from support import FIXTURES, Checks, batch, comparable, ray_temp_dir, read_json, validate

try:
    import ray
except ImportError:
    print("ray is not installed in", sys.executable, "- skipped (scripts/test.sh installs it)")
    sys.exit(77)

CASES = [
    ("mlp", "--compiled eager"), ("attention", "--compiled eager"), ("bf16_block", "--compiled eager"), ("cond", "--compiled eager"),
    ("conv_bn_relu", "--compiled eager"), ("ln_softmax_gelu", "--compiled eager"), ("multi_output_core", "--compiled eager"),
    ("loop_map", "--compiled eager"), ("attention_core", "--compiled fault:aten.bmm#2:bf16"), ("mlp", "--compiled fault:linear:scale"),
    ("python_only_ops", "--compiled eager"), ("mlp_core", "--compiled inductor --no-exploded"),
    ("ln_softmax_gelu", "--compiled inductor --no-exploded"),
]


def inputs_of(name):
    base = name[:-len("_core")] if name.endswith("_core") else name
    return os.path.join(FIXTURES, base + "_inputs.pt")


def main():
    pt2diff = sys.argv[1]
    c = Checks("batch on ray")
    tmp = tempfile.mkdtemp(prefix="pt2diff-batch-ray-")
    try:
        manifest = os.path.join(tmp, "fixtures.tsv")
        with open(manifest, "w") as f:
            for name, options in CASES:
                # The Inductor cases of the three runs share one Inductor cache: the local run compiles them, the
                # Ray runs reuse those compiles (their rows are compared without timings).
                if "inductor" in options:
                    options += f" --inductor-cache {os.path.join(tmp, 'inductor-cache')}"
                f.write(f"{os.path.join(FIXTURES, name + '.pt2')}\t{inputs_of(name)}\t{options}\n")
        wall = {}
        start = time.perf_counter()
        local = batch(pt2diff, manifest, "--out", os.path.join(tmp, "local"), "--jobs", "2")
        wall["local --jobs 2"] = time.perf_counter() - start
        c.check(local.returncode == 1, f"the local run finishes (exit 1: planted faults) ({local.returncode}; {local.stderr.strip()[-300:]})")
        local_doc = read_json(os.path.join(tmp, "local", "summary.json"))

        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=ray_temp_dir(), log_to_driver=False)
        address = ray.get_runtime_context().gcs_address
        print(f"ray started in {time.perf_counter() - start:.1f} s at {address}")
        try:
            for what, extra in (("ray", []), ("ray --ray-ship", ["--ray-ship"])):
                out = os.path.join(tmp, "out-" + what.replace(" ", ""))
                start = time.perf_counter()
                run = batch(pt2diff, manifest, "--out", out, "--ray", address, *extra)
                wall[what] = time.perf_counter() - start
                c.check(run.returncode == 1, f"{what}: finishes, exit 1 ({run.returncode}; {run.stderr.strip()[-300:]})")
                doc = read_json(os.path.join(out, "summary.json"))
                err = validate(doc, "batch-summary.schema.json")
                c.check(err is None and doc["executor"] == "ray", f"{what}: the summary matches the schema ({err})")
                same = comparable(doc) == comparable(local_doc)
                if not same:
                    for a, b in zip(comparable(doc)["cases"], comparable(local_doc)["cases"]):
                        if a != b:
                            print("  differs:", {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)})
                c.check(same, f"{what}: the summary equals the local run's but for timings ({len(doc['cases'])} cases)")
                c.check(all(r["failure"] or os.path.isfile(os.path.join(out, r["report_html"])) for r in doc["cases"]),
                        f"{what}: every diagnosed case's reports came back to DIR")
        finally:
            ray.shutdown()
        verdicts = [(r["verdict"], r["failure"]) for r in local_doc["cases"]]
        c.check(len(CASES) >= 10 and verdicts.count(("diverged", None)) == 2 and verdicts.count((None, "bad_input")) == 1
                and verdicts.count(("agree", None)) == len(CASES) - 3, f"the corpus: 2 diverge, 1 bad input, the rest agree ({verdicts})")
        print("wall: " + ", ".join(f"{k} {v:.1f} s" for k, v in wall.items()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
