#!/usr/bin/env python3
"""The aoti backend runs a user's AOTInductor package like Python does, and does AOTI's checklist first
(a ctest; slow: ~2 min, two package compiles).

    aoti_package.py PT2DIFF FIXTURES_DIR

1. A package built from fixtures/mlp.pt2 (torch._inductor.aoti_compile_and_package), run in Python with
   aoti_load_package: `pt2diff mlp.pt2 mlp_inputs.pt --compiled aoti:PACKAGE` gives the same outputs bit
   for bit, exits 0 and names the package.
2. AOTI's checklist, each one line before the package runs: a file that is not a package (exit 2); a
   package whose metadata says cuda, run on the CPU (exit 2, the device named with the remedy); an input
   whose strides are not those the package was compiled for (exit 4, the input named: AOTI's compiled
   code reads memory by its compiled strides, which AOTI_RUNTIME_CHECK_INPUTS=1 would check).
3. The package's own guards: a package built from a static re-export of fixtures/dynamic_batch.pt2 (batch
   6) agrees at batch 6; at batch 8, which the dynamic archive accepts, its own check refuses the input and
   pt2diff names it (exit 4).
"""
import json
import os
import subprocess
import sys
import tempfile
import zipfile

import torch


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def expect(ok, what, out=""):
    if not ok:
        print(f"FAILED: {what}\n{out}")
        sys.exit(1)
    print(f"ok: {what}")


def with_device_key(package, copy, device):
    """A copy of `package` whose metadata says it was built for `device`."""
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(copy, "w") as dst:
        edited = 0
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("_metadata.json"):
                meta = json.loads(data)
                meta["AOTI_DEVICE_KEY"] = device
                data = json.dumps(meta).encode()
                edited += 1
            dst.writestr(item, data)
    expect(edited >= 1, f"the package has metadata ({edited} files)")


def main():
    pt2diff, fixtures = sys.argv[1], sys.argv[2]
    graph, inputs_file = os.path.join(fixtures, "mlp.pt2"), os.path.join(fixtures, "mlp_inputs.pt")
    with tempfile.TemporaryDirectory() as tmp:
        package = os.path.join(tmp, "mlp_package.pt2")
        torch._inductor.aoti_compile_and_package(torch.export.load(graph), package_path=package)
        args = torch.load(inputs_file, weights_only=True)
        expected = torch._inductor.aoti_load_package(package)(*args)
        saved = os.path.join(tmp, "outputs.pt")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + package, "--save-outputs", saved])
        print(out)
        expect(rc == 0 and "aoti: " + package in out, "a clean package agrees and is named", f"exit {rc}: {err}")
        compiled, _, _ = torch.load(saved, weights_only=True)
        expect(torch.equal(compiled[0], expected), "its outputs through pt2diff are Python's aoti_load_package's bit for bit")

        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + inputs_file])
        expect(rc == 2 and "is not an AOTInductor package" in err, "a file that is not a package: one line, exit 2", f"{rc}\n{out}\n{err}")

        cuda_package = os.path.join(tmp, "cuda_package.pt2")
        with_device_key(package, cuda_package, "cuda")
        rc, out, err = run([pt2diff, graph, inputs_file, "--compiled", "aoti:" + cuda_package])
        expect(rc == 2 and "was compiled for cuda and this run is on cpu: run with --device cuda" in err and not out.strip(),
               "a cuda package on the CPU: one line before anything runs, exit 2", f"{rc}\n{out}\n{err}")

        x = args[0]
        strided = os.path.join(tmp, "strided_inputs.pt")
        torch.save((x.t().contiguous().t(),) + tuple(args[1:]), strided)
        rc, out, err = run([pt2diff, graph, strided, "--compiled", "aoti:" + package])
        want = f"input 'x' has strides [1, {x.shape[0]}], the package was compiled for [{x.shape[1]}, 1]"
        expect(rc == 4 and want in out, "an input in another layout: named with its strides, exit 4", f"{rc}\n{out}\n{err}")

        dyn_graph = os.path.join(fixtures, "dynamic_batch.pt2")
        static = torch.export.export(torch.export.load(dyn_graph).module(), (torch.randn(6, 16),))
        static_package = os.path.join(tmp, "static_package.pt2")
        torch._inductor.aoti_compile_and_package(static, package_path=static_package)
        for batch in (6, 8):
            batch_inputs = os.path.join(tmp, f"batch{batch}.pt")
            torch.save((torch.randn(batch, 16),), batch_inputs)
            rc, out, err = run([pt2diff, dyn_graph, batch_inputs, "--compiled", "aoti:" + static_package])
            if batch == 6:
                expect(rc == 0, "a static package of a dynamic program agrees at its batch", f"{rc}\n{out}\n{err}")
            else:
                want = "the package's own input check refused the inputs: input 'x' (input_handles[0]): unmatched dim value at 0, expected: 6"
                expect(rc == 4 and want in out, "the package's own guard refuses batch 8, which the archive accepts: the input named",
                       f"{rc}\n{out}\n{err}")
    print("aoti package through pt2diff: bit-identical to Python's run; every check one line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
