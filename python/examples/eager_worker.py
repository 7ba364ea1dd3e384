#!/usr/bin/env python3
"""An external compiler worker for pt2diff: regions compiled by any torch.compile backend
(default aot_eager: Dynamo and AOTAutograd, no code generation), reusing pt2diff_worker's request loop
and region building. docs/worker-protocol.md, "Writing your own worker".

    pt2diff MODEL.pt2 INPUTS.pt --compiled "external:python python/examples/eager_worker.py [--backend NAME]"
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # python/, for pt2diff_worker
from pt2diff_worker.protocol import PROTOCOL, Failure, describe, protocol_channel, serve  # noqa: E402

replies = protocol_channel()  # stdout is the protocol's from here on: torch's import included
import torch  # noqa: E402
from pt2diff_worker.archive import Archive  # noqa: E402
from pt2diff_worker.inductor import torch_settings  # noqa: E402


class CompileWorker:
    def __init__(self, backend):
        self.backend, self.archive, self.regions = backend, None, {}

    def hello(self, req):
        return {"worker": f"torch.compile {self.backend}", "protocol": PROTOCOL, "torch": torch.__version__}

    def load(self, req):  # archive, device, custom-op libraries, CPU attention: as the Inductor worker
        self.archive, self.regions = Archive.from_request(req), {}
        return {"nodes": self.archive.node_count()}

    def compile(self, req):
        if self.archive is None:
            raise Failure("bad_request", "compile before load")
        gm, names = self.archive.region_module(req["nodes"], req["inputs"], req["outputs"], bool(req.get("exploded")))
        fn, settings = torch.compile(gm, backend=self.backend, fullgraph=True, dynamic=False), req.get("settings", {})
        try:
            with torch.no_grad(), torch_settings(settings):
                fn(*self.archive.region_inputs(req["example_inputs"], names))  # compiles on the first call
        except Exception as e:  # noqa: BLE001
            raise Failure("compile_failed", describe(e))
        self.regions[req["region"]] = (fn, names, settings)
        return {}

    def run(self, req):
        if req["region"] not in self.regions:
            raise Failure("bad_request", f"no compiled region '{req['region']}'")
        fn, names, settings = self.regions[req["region"]]
        inputs = self.archive.region_inputs(req["inputs"], names)
        if "seed" in req:
            torch.manual_seed(int(req["seed"]))
        try:
            with torch.no_grad(), torch_settings(settings):
                outputs = fn(*inputs)
        except Exception as e:  # noqa: BLE001
            raise Failure("run_failed", describe(e))
        torch.save([o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outputs], req["outputs_file"])

    def forget(self, req):
        self.regions.pop(req["region"], None)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="aot_eager", help="a torch.compile backend (eager, aot_eager, inductor, ...)")
    serve(CompileWorker(p.parse_args().backend), replies=replies)
