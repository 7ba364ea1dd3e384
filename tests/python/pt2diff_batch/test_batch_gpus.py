"""`pt2diff batch` gives each GPU case a GPU of its own, and runs at once as many GPU cases as there are GPUs.
A ctest, labels batch and ray (tests/cli_case.py says how to run it alone); fast: --compiled eager. On this CPU
machine the GPUs are names only: CUDA_VISIBLE_DEVICES="0,1" for the local pool, Ray started with num_gpus=2 (those
tests skipped without ray); scripts/gpu_test.sh runs the same scheduling on real GPUs.

Three GPU exports (fixtures/cuda/, export device cuda:0) and four CPU fixtures, --jobs 4: every GPU case ran with
CUDA_VISIBLE_DEVICES set to one GPU (DIR/cases/KEY/run.json: "gpu"), never more than two GPU cases' diffs at once,
CPU cases without one; the Ray run assigns GPUs the same way, and both summaries equal a run with no GPU listed
(CUDA_VISIBLE_DEVICES="") but for timings.
"""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from cli_case import FIXTURES, CliTestCase  # noqa: E402
from batch_support import batch, comparable, inputs_of, ray_temp_dir, read_json  # noqa: E402

from pt2diff_batch.runner import runs_on_gpu, visible_gpus  # noqa: E402

try:
    import ray
except ImportError:
    ray = None

CUDA = os.path.join(FIXTURES, "cuda")
GPU_CASES = [(os.path.join(CUDA, n + ".pt2"), os.path.join(CUDA, n + "_inputs.pt"), "--compiled eager")
             for n in ("attention_cuda_bf16", "attention_cuda_fp32", "attention_cuda_masked_fp32")]
CPU_CASES = [(os.path.join(FIXTURES, n + ".pt2"), inputs_of(FIXTURES, n), "--compiled eager")
             for n in ("mlp", "attention", "conv_bn_relu", "ln_softmax_gelu")]


def gpu_runs(out, doc):
    """(case, gpu or None, diff start, diff end) per case, from DIR/cases/KEY/run.json."""
    rows = []
    for r in doc["cases"]:
        run = read_json(os.path.join(out, "cases", r["key"], "run.json"))
        rows.append((r["case"], run.get("gpu"), run.get("diff_started"), run.get("diff_finished")))
    return rows


class GpuOfACase(unittest.TestCase):
    def test_runs_on_gpu(self):
        self.assertEqual([runs_on_gpu([], "cuda:0"), runs_on_gpu(["--device", "cuda"], "cpu"),
                          runs_on_gpu(["--device=cpu"], "cuda:0"), runs_on_gpu([], "cpu")],
                         [True, True, False, False], "a GPU case: its --device, else its export device")

    def test_visible_gpus(self):
        self.assertTrue(visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}) == ["0", "1"]
                        and visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == [],
                        "the GPUs: CUDA_VISIBLE_DEVICES when set")


class GpuScheduling(CliTestCase):
    """The batch with no GPU listed, with CUDA_VISIBLE_DEVICES=0,1 (the local pool) and on Ray with 2 GPUs (where ray
    is installed), in setUpClass."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tmp = cls.tmp
        manifest = os.path.join(tmp, "cases.tsv")
        with open(manifest, "w") as f:
            for graph, inputs, options in GPU_CASES + CPU_CASES:
                f.write(f"{graph}\t{inputs}\t{options}\n")
        cls.none = batch(cls.cli, manifest, "--out", os.path.join(tmp, "none"), "--jobs", "4",
                         env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
        cls.reference = read_json(os.path.join(tmp, "none", "summary.json"))
        cls.none_runs = gpu_runs(os.path.join(tmp, "none"), cls.reference)

        out = os.path.join(tmp, "local")
        cls.local = batch(cls.cli, manifest, "--out", out, "--jobs", "4", env=dict(os.environ, CUDA_VISIBLE_DEVICES="0,1"))
        cls.local_doc = read_json(os.path.join(out, "summary.json"))
        cls.local_runs = gpu_runs(out, cls.local_doc)

        if ray is None:
            return
        ray_tmp = ray_temp_dir()
        cls.addClassCleanup(shutil.rmtree, ray_tmp, True)
        ray.init(num_cpus=4, num_gpus=2, include_dashboard=False, _temp_dir=ray_tmp, log_to_driver=False)
        cls.addClassCleanup(ray.shutdown)
        out = os.path.join(tmp, "ray")
        cls.ray_run = batch(cls.cli, manifest, "--out", out, "--ray", ray.get_runtime_context().gcs_address,
                            env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"})
        cls.ray_doc = read_json(os.path.join(out, "summary.json"))
        cls.ray_runs = gpu_runs(out, cls.ray_doc)

    def need_ray(self):
        if ray is None:
            self.skipTest(f"ray is not installed in {sys.executable}: the Ray half is skipped (scripts/test.sh installs it)")

    def check_assignment(self, what, rows):
        """Each GPU case ran with one GPU of its own, the CPU cases with none; at most 2 GPU cases' diffs at once."""
        on_gpu = [(case, gpu) for case, gpu, _, _ in rows if gpu is not None]
        self.assertTrue(len(rows) == len(GPU_CASES) + len(CPU_CASES) and len(on_gpu) == len(GPU_CASES)
                        and all(g in ("0", "1") for _, g in on_gpu),
                        f"{what}: each of the {len(GPU_CASES)} GPU cases ran with one GPU of its own ({on_gpu}), "
                        "the CPU cases with none")
        events = sorted([(s, 1) for _, gpu, s, e in rows if gpu is not None and s and e] +
                        [(e, -1) for _, gpu, s, e in rows if gpu is not None and s and e])  # an end sorts before a start
        most = running = 0
        for _, step in events:
            running += step
            most = max(most, running)
        self.assertTrue(0 < most <= 2, f"{what}: at most 2 GPU cases' diffs at once ({most})")

    def test_no_gpu_listed_every_case_agrees(self):
        none = self.none
        self.assertEqual(none.returncode, 0,
                         f"no GPU listed: every case agrees (exit {none.returncode}; {none.stderr.strip()[-300:]})")

    def test_no_gpu_listed_no_case_given_one(self):
        self.assertTrue(all(gpu is None for _, gpu, _, _ in self.none_runs), "no GPU listed: no case is given one")

    def test_local_pool_every_case_agrees(self):
        run = self.local
        self.assertEqual(run.returncode, 0,
                         f"CUDA_VISIBLE_DEVICES=0,1: every case agrees (exit {run.returncode}; {run.stderr.strip()[-300:]})")

    def test_local_pool_assigns_gpus(self):
        """Each GPU case of the local pool ran with one GPU of its own, at most 2 at once."""
        self.check_assignment("local pool", self.local_runs)

    def test_local_pool_summary_equals_the_run_without_gpus(self):
        self.assertEqual(comparable(self.local_doc), comparable(self.reference),
                         "local pool: the summary equals the run without GPUs but for timings")

    def test_ray_every_case_agrees(self):
        self.need_ray()
        run = self.ray_run
        self.assertEqual(run.returncode, 0,
                         f"Ray with 2 GPUs: every case agrees (exit {run.returncode}; {run.stderr.strip()[-300:]})")

    def test_ray_assigns_gpus(self):
        """Each GPU case of the Ray run ran with one GPU of its own, at most 2 at once."""
        self.need_ray()
        self.check_assignment("ray", self.ray_runs)

    def test_ray_summary_equals_the_run_without_gpus(self):
        self.need_ray()
        self.assertEqual(comparable(self.ray_doc), comparable(self.reference),
                         "ray: the summary equals the run without GPUs but for timings")


if __name__ == "__main__":
    unittest.main()
