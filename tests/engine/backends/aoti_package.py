#!/usr/bin/env python3
"""The aoti backend runs a user's AOTInductor package like Python does (a ctest; slow: ~1 min).

    aoti_package.py PT2DIFF FIXTURES_DIR

Builds a package from fixtures/mlp.pt2 with torch._inductor.aoti_compile_and_package, runs it in
Python with aoti_load_package, then `pt2diff mlp.pt2 mlp_inputs.pt --compiled aoti:PACKAGE` must give
the same outputs bit for bit, exit 0, and name the package in its report.
"""
import os
import subprocess
import sys
import tempfile

import torch


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    graph, inputs_file = os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt")
    with tempfile.TemporaryDirectory() as tmp:
        package = os.path.join(tmp, "mlp_package.pt2")
        ep = torch.export.load(graph)
        torch._inductor.aoti_compile_and_package(ep, package_path=package)
        args = torch.load(inputs_file, weights_only=True)
        expected = torch._inductor.aoti_load_package(package)(*args)
        saved = os.path.join(tmp, "outputs.pt")
        run = subprocess.run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + package, "--save-outputs", saved],
                             capture_output=True, text=True)
        print(run.stdout)
        if run.returncode != 0 or "aoti: " + package not in run.stdout:
            print(f"pt2diff exited {run.returncode}: {run.stderr}")
            return 1
        compiled, _, _ = torch.load(saved, weights_only=True)
        if not torch.equal(compiled[0], expected):
            print("the package's outputs through pt2diff differ from Python's aoti_load_package")
            return 1
        wrong = subprocess.run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + inputs_file], capture_output=True, text=True)
        if wrong.returncode != 4 or "is not an AOTInductor package" not in wrong.stdout:
            print(f"a file that is not a package: exit {wrong.returncode}\n{wrong.stdout}\n{wrong.stderr}")
            return 1
    print("aoti package through pt2diff: bit-identical to Python's run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
