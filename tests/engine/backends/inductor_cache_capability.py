"""pt2diff's Inductor cache is kept per ATEN_CPU_CAPABILITY: a graph compiled with the CPU's own
vector ISA, then again under ATEN_CPU_CAPABILITY=default with the same --inductor-cache, compiles both
times. (Inductor's FX graph cache is not keyed by the capability: without a cache per capability the
second compile reuses AVX-512 code and fails to build, "'at::vec' has not been declared".)

    python inductor_cache_capability.py PT2DIFF FIXTURES
Exit 77 (skipped) where the CPU's own capability is already `default`.
"""
import os
import subprocess
import sys
import tempfile

import torch


def main():
    cli, fixtures = sys.argv[1], sys.argv[2]
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        print("this CPU's ATen capability is already DEFAULT: nothing to switch between; skipping")
        return 77
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "TORCHINDUCTOR_CACHE_DIR")}
    with tempfile.TemporaryDirectory() as cache:
        args = [cli, os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt"), "--compiled", "inductor",
                "--inductor-cache", cache]
        for capability in (None, "default"):
            run_env = dict(env, **({"ATEN_CPU_CAPABILITY": capability} if capability else {}))
            p = subprocess.run(args, capture_output=True, text=True, env=run_env, timeout=900)
            label = capability or torch.backends.cpu.get_cpu_capability().lower()
            if p.returncode != 0:
                print(f"FAILED under ATEN_CPU_CAPABILITY={label}: exit {p.returncode}\n{p.stderr[-2000:]}")
                return 1
            print(f"compiled and agreed under ATEN_CPU_CAPABILITY={label}")
    print("one inductor cache per cpu capability")
    return 0


if __name__ == "__main__":
    sys.exit(main())
