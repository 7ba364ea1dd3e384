#!/usr/bin/env python3
"""`pt2diff batch` gives each GPU case a GPU of its own, and runs at once as many GPU cases as there are GPUs
(run by ctest; fast: --compiled eager). On this CPU machine the GPUs are names only: CUDA_VISIBLE_DEVICES="0,1"
for the local pool, Ray started with num_gpus=2 (skipped without ray); scripts/gpu_test.sh runs the same
scheduling on real GPUs.

    batch_gpus.py PT2DIFF

Three GPU exports (fixtures/cuda/, export device cuda:0) and four CPU fixtures, --jobs 4: every GPU case ran with CUDA_VISIBLE_DEVICES set to one GPU (DIR/cases/KEY/run.json: "gpu"),
never more than two GPU cases' diffs at once, CPU cases without one; the Ray run assigns GPUs the same way, and
both summaries equal a run with no GPU listed (CUDA_VISIBLE_DEVICES="") but for timings.
"""
import os
import shutil
import sys
import tempfile

from support import FIXTURES, Checks, batch, comparable, ray_temp_dir, read_json

from pt2diff_batch.runner import runs_on_gpu, visible_gpus

CUDA = os.path.join(FIXTURES, "cuda")
GPU_CASES = [(os.path.join(CUDA, n + ".pt2"), os.path.join(CUDA, n + "_inputs.pt"), "--compiled eager")
             for n in ("attention_cuda_bf16", "attention_cuda_fp32", "attention_cuda_masked_fp32")]
CPU_CASES = [(os.path.join(FIXTURES, n + ".pt2"), os.path.join(FIXTURES, (n[:-5] if n.endswith("_core") else n) + "_inputs.pt"),
              "--compiled eager") for n in ("mlp", "attention", "conv_bn_relu", "ln_softmax_gelu")]


def gpu_runs(out, doc):
    """(case, gpu or None, diff start, diff end) per case, from DIR/cases/KEY/run.json."""
    rows = []
    for r in doc["cases"]:
        run = read_json(os.path.join(out, "cases", r["key"], "run.json"))
        rows.append((r["case"], run.get("gpu"), run.get("diff_started"), run.get("diff_finished")))
    return rows


def check_assignment(c, what, out, doc):
    rows = gpu_runs(out, doc)
    on_gpu = [(case, gpu) for case, gpu, _, _ in rows if gpu is not None]
    c.check(len(rows) == len(GPU_CASES) + len(CPU_CASES) and len(on_gpu) == len(GPU_CASES) and all(g in ("0", "1") for _, g in on_gpu),
            f"{what}: each of the {len(GPU_CASES)} GPU cases ran with one GPU of its own ({on_gpu}), the CPU cases with none")
    events = sorted([(s, 1) for _, gpu, s, e in rows if gpu is not None and s and e] +
                    [(e, -1) for _, gpu, s, e in rows if gpu is not None and s and e])  # an end sorts before a start
    most = running = 0
    for _, step in events:
        running += step
        most = max(most, running)
    c.check(0 < most <= 2, f"{what}: at most 2 GPU cases' diffs at once ({most})")


def main():
    pt2diff = sys.argv[1]
    c = Checks("batch over GPUs")
    c.check([runs_on_gpu([], "cuda:0"), runs_on_gpu(["--device", "cuda"], "cpu"), runs_on_gpu(["--device=cpu"], "cuda:0"),
             runs_on_gpu([], "cpu")] == [True, True, False, False], "a GPU case: its --device, else its export device")
    c.check(visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}) == ["0", "1"] and visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == [],
            "the GPUs: CUDA_VISIBLE_DEVICES when set")
    tmp = tempfile.mkdtemp(prefix="pt2diff-batch-gpus-")
    try:
        manifest = os.path.join(tmp, "cases.tsv")
        with open(manifest, "w") as f:
            for graph, inputs, options in GPU_CASES + CPU_CASES:
                f.write(f"{graph}\t{inputs}\t{options}\n")
        none = batch(pt2diff, manifest, "--out", os.path.join(tmp, "none"), "--jobs", "4",
                     env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        c.check(none.returncode == 0, f"no GPU listed: every case agrees (exit {none.returncode}; {none.stderr.strip()[-300:]})")
        reference = read_json(os.path.join(tmp, "none", "summary.json"))
        c.check(all(gpu is None for _, gpu, _, _ in gpu_runs(os.path.join(tmp, "none"), reference)),
                "no GPU listed: no case is given one")

        out = os.path.join(tmp, "local")
        run = batch(pt2diff, manifest, "--out", out, "--jobs", "4", env=dict(os.environ, CUDA_VISIBLE_DEVICES="0,1"))
        c.check(run.returncode == 0, f"CUDA_VISIBLE_DEVICES=0,1: every case agrees (exit {run.returncode}; {run.stderr.strip()[-300:]})")
        doc = read_json(os.path.join(out, "summary.json"))
        check_assignment(c, "local pool", out, doc)
        c.check(comparable(doc) == comparable(reference), "local pool: the summary equals the run without GPUs but for timings")

        try:
            import ray
        except ImportError:
            print("ray is not installed: the Ray half is skipped (scripts/test.sh installs it)")
            return c.finish()
        ray.init(num_cpus=4, num_gpus=2, include_dashboard=False, _temp_dir=ray_temp_dir(), log_to_driver=False)
        try:
            out = os.path.join(tmp, "ray")
            run = batch(pt2diff, manifest, "--out", out, "--ray", ray.get_runtime_context().gcs_address,
                        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"})
            c.check(run.returncode == 0, f"Ray with 2 GPUs: every case agrees (exit {run.returncode}; {run.stderr.strip()[-300:]})")
            doc = read_json(os.path.join(out, "summary.json"))
            check_assignment(c, "ray", out, doc)
            c.check(comparable(doc) == comparable(reference), "ray: the summary equals the run without GPUs but for timings")
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
