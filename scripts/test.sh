#!/usr/bin/env bash
# Sets up pt2diff if needed, builds everything and runs every test with ctest; then rebuilds the
# loader tests under AddressSanitizer + UndefinedBehaviorSanitizer and runs them too.
#
#   scripts/test.sh                 all of it
#   PT2DIFF_SKIP_SANITIZE=1 scripts/test.sh   skip the sanitizer build (faster local loop)
#   PT2DIFF_SKIP_FUZZ=1 scripts/test.sh       skip the short fuzz run (scripts/fuzz.sh)
#   scripts/test.sh --python /path/to/python  build and test against that Python's torch, as is (setup.sh)
#   scripts/test.sh --quick         the inner loop: builds what the fast tests need and runs them (the C++ unit
#                                   tests of the IR, the loader and the engine, the schema and report checks:
#                                   no Inductor compile, no zoo, no sanitizer; docs/testing.md)
#
# Each phase's wall time goes to BUILD/phases.tsv and ctest's per-test times to BUILD/ctest.xml:
# `python3 bench/test_time.py BUILD` prints where the time went.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}
QUICK=0
while (($#)); do
  case "$1" in
    --python) export PT2DIFF_PYTHON=${2:?"--python needs the path of a Python that has torch"}; shift ;;
    --python=*) export PT2DIFF_PYTHON=${1#--python=} ;;
    --quick) QUICK=1 ;;
    *) echo "test.sh: unknown argument '$1' (--python PATH, --quick)" >&2; exit 2 ;;
  esac
  shift
done
PYTHON=${PT2DIFF_PYTHON:-$VENV/bin/python}
export PT2DIFF_PHASES=$BUILD/phases.tsv
mkdir -p "$BUILD" && : > "$PT2DIFF_PHASES"
source "$ROOT/scripts/phases.sh"

"$ROOT/scripts/setup.sh" --no-run
phase_start=$(date +%s.%N)  # setup.sh wrote its own phases

if ((QUICK)); then
  # The targets the quick labels need (no benchmarks, no sanitizer build), then those tests.
  cmake --build "$BUILD" --target ir_tests loader_tests engine_tests pt2diff_cli
  phase "quick: build"
  (cd "$BUILD" && ctest --output-on-failure -j2 -L quick --output-junit ctest.xml)
  phase "quick: ctest"
  exit 0
fi
# The Ray test of `pt2diff batch` needs the optional extra `ray` (python/pyproject.toml); the test path only.
if [[ -z "${PT2DIFF_PYTHON:-}" ]] && ! "$PYTHON" -c "import ray" 2>/dev/null; then
  "$PYTHON" -m pip install -q --disable-pip-version-check "ray>=2.9" || echo "test.sh: could not install ray: the batch Ray test is skipped" >&2
fi
# pytest is a test extra (python_pytest_example runs docs/examples/pytest with it): into the venv when it
# is missing; a --python interpreter is left as is (the test is then skipped without pytest).
if [[ -z "${PT2DIFF_PYTHON:-}" ]] && ! "$PYTHON" -c "import pytest" 2>/dev/null; then
  "$PYTHON" -m pip install -q --disable-pip-version-check pytest
fi
phase "test: the test extras (ray, pytest)"
cmake --build "$BUILD"
phase "test: build the tests and benchmarks"
(cd "$BUILD" && ctest --output-on-failure -j2 --output-junit ctest.xml)
phase "test: ctest"
# The archive loader and the inputs reader under libFuzzer: the kept crashes, then a fixed short run.
[[ "${PT2DIFF_SKIP_FUZZ:-0}" == 1 ]] || { "$ROOT/scripts/fuzz.sh"; phase "test: fuzz (clang build and run)"; }

if [[ "${PT2DIFF_SKIP_SANITIZE:-0}" != 1 ]]; then
  ASAN_BUILD="$BUILD-sanitize"
  if [[ ! -f "$ASAN_BUILD/build.ninja" ]]; then
    # Line tables only (-g1), as the main build: ASan and UBSan reports keep file:line, and full -g about
    # doubles the compile time of the template-heavy files (this build is a large part of the test command).
    # clang when it is there (scripts/fuzz.sh installs it): at -O0 with ASan and UBSan it compiles the engine's
    # files 1.6-1.8x faster than GCC (docs/testing.md); its sanitizers are the same ones.
    sanitizer_cxx=()
    command -v clang++ >/dev/null && sanitizer_cxx=(-DCMAKE_CXX_COMPILER=clang++)
    cmake -S "$ROOT" -B "$ASAN_BUILD" -G Ninja "${sanitizer_cxx[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
          -DPT2DIFF_SANITIZE=ON -DPT2DIFF_BUILD_BENCH=OFF -DPT2DIFF_PYTHON="$PYTHON" >/dev/null
  fi
  cmake --build "$ASAN_BUILD" --target loader_tests pt2diff_cli
  phase "test: sanitizer build"
  # libtorch is not built with ASan: its allocations at exit are reported as leaks we cannot fix.
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd "$ASAN_BUILD" && ctest --output-on-failure -j2 -L sanitize --output-junit ctest.xml)
  phase "test: sanitizer ctest"
fi
