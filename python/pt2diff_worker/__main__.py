"""`python -m pt2diff_worker [--cache-dir DIR]`: the Inductor worker (pt2diff_worker.cli.main)."""
from pt2diff_worker.cli import main

main(prog="python -m pt2diff_worker")
