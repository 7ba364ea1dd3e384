#!/usr/bin/env bash
# Builds the benchmarks, runs them and regenerates the tables of docs/performance.md (bench/run.py).
#
#   bench/run.sh                        every section but the cold build (about 8 minutes on 2 cores)
#   bench/run.sh --sections compile,diff   some sections
#   bench/run.sh --sections build       the cold build (ccache off, about 15 minutes on 2 cores)
#   bench/run.sh --render-only          re-render the doc from bench/results/ without running anything
#
# Run it on a quiet machine: the figures are wall times. Commit docs/performance.md and bench/results/
# together; the test `performance_doc_is_generated` checks that they agree.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}

if [[ " $* " != *" --render-only "* ]]; then
  "$ROOT/scripts/setup.sh" --no-run
  cmake --build "$BUILD" --target pt2diff_cli loader_bench dag_bench interpreter_bench peak_memory compile_bench localize_bench \
        sweep_bench
fi
exec "$VENV/bin/python" "$ROOT/bench/run.py" --build "$BUILD" --python "$VENV/bin/python" "$@"
