"""Plants the lowering bug of tests/engine/localize/planted_lowering.py in every Python process started
with this folder on PYTHONPATH and PT2DIFF_PLANT_OP set: bench/minifier_bench.py puts it there so that
the accuracy minifier's own processes (minifier_launcher.py and the isolated checks it starts for each
candidate graph) compile with the same bug as the model's first compile."""
import os
import sys

if os.environ.get("PT2DIFF_PLANT_OP"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "engine", "localize"))
    import planted_lowering

    sys.path.pop(0)
    planted_lowering.plant()
