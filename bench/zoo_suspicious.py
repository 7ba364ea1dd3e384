"""The suspicious level on the zoo (docs/verdicts.md), run by hand:

    python bench/zoo_suspicious.py build/pt2diff .   (writes OUT=/tmp/zoo_suspicious.json)

A sub-tolerance planted bug, fp32 matmuls computed in bf16 (tests/engine/localize/lowp_matmul_worker.py),
on the core form of each fp32 zoo model: the verdict, the level and the output error ratio (compiled's
RMSE to fp64 over eager's). Exploded compile, localization and the kernel map off."""
import json, os, subprocess, sys, time
cli, root = sys.argv[1], sys.argv[2]
worker = os.path.join(root, "tests/engine/localize/lowp_matmul_worker.py")
py = os.path.expanduser("~/.cache/pt2diff/venv/bin/python")
rows = []
for m in ["bert", "gpt2", "llama", "vit", "transformer_encoder", "lstm", "resnet18", "mobilenet_v3"]:
    g, i = f"{root}/fixtures/zoo/{m}_core.pt2", f"{root}/fixtures/zoo/{m}_inputs.pt"
    out = f"/tmp/zoo_suspicious_{m}.json"
    t = time.time()
    p = subprocess.run([cli, g, i, "--compiled", f"external:{py} {worker}", "--no-exploded", "--no-localize", "--no-kernel-map",
                        "--json", out], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        print(m, "exit", p.returncode, p.stderr[-300:], flush=True); continue
    r = json.load(open(out))
    outs = [(o["name"], o["level"], o.get("error_ratio")) for o in r["outputs"]]
    print(m, r["verdict"], r.get("level"), outs, f"{time.time()-t:.0f}s", flush=True)
    rows.append({"model": m, "verdict": r["verdict"], "level": r.get("level"), "outputs": outs})
json.dump(rows, open(os.environ.get("OUT", "/tmp/zoo_suspicious.json"), "w"), indent=1)
