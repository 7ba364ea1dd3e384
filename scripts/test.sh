#!/usr/bin/env bash
# Sets up pt2diff if needed, builds everything and runs every test with ctest; then builds the libFuzzer targets
# (scripts/fuzz.sh) and the loader tests again under AddressSanitizer + UndefinedBehaviorSanitizer
# (scripts/sanitize.sh), and runs the sanitizer tests beside the short fuzz run.
#
#   scripts/test.sh                 all of it
#   PT2DIFF_SKIP_SANITIZE=1 scripts/test.sh   skip the sanitizer build (faster local loop)
#   PT2DIFF_SKIP_FUZZ=1 scripts/test.sh       skip the short fuzz run (scripts/fuzz.sh)
#   scripts/test.sh --python /path/to/python  build and test against that Python's torch, as is (setup.sh)
#   scripts/test.sh --quick         the inner loop: builds what the fast tests need and runs them (the C++ unit
#                                   tests of the IR, the loader and the engine, the schema and report checks:
#                                   no Inductor compile, no zoo, no sanitizer; docs/testing.md)
#   scripts/test.sh --extended      all of it plus the extended tier (label `extended`: the zoo's every model, the
#                                   second torch from the registry, the planted AOTI twin, ...; tests/suite_budget.tsv
#                                   and docs/testing.md say what each covers): about an hour on 2 cores
#
# The default is the main tier (`ctest -LE extended`), held to tests/suite_budget.tsv's budget (25 minutes cold on
# 2 cores; the ctest suite_budget_is_kept checks every test has a row). Each phase's wall time is printed as it ends
# and goes to BUILD/phases.tsv, ctest's per-test times to BUILD/ctest.xml; at the end the run is held against the
# budget (tests/suite_budget.py --measured). A failing test prints the pt2diff runs it made and keeps their output in
# BUILD/test-evidence/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}
QUICK=0 EXTENDED=0
while (($#)); do
  case "$1" in
    --python) export PT2DIFF_PYTHON=${2:?"--python needs the path of a Python that has torch"}; shift ;;
    --python=*) export PT2DIFF_PYTHON=${1#--python=} ;;
    --quick) QUICK=1 ;;
    --extended) EXTENDED=1 ;;
    *) echo "test.sh: unknown argument '$1' (--python PATH, --quick, --extended)" >&2; exit 2 ;;
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
# atheris (the Python fuzzer of the batch's corpus sources) now rather than in the fuzz run: nothing is
# installed into the venv while the tests use it.
FUZZ=1 SANITIZE=1
[[ "${PT2DIFF_SKIP_FUZZ:-0}" == 1 ]] && FUZZ=0
[[ "${PT2DIFF_SKIP_SANITIZE:-0}" == 1 ]] && SANITIZE=0
if ((FUZZ)) && [[ -z "${PT2DIFF_PYTHON:-}" ]] && ! "$PYTHON" -c "import atheris" 2>/dev/null; then
  "$PYTHON" -m pip install -q --disable-pip-version-check atheris || echo "test.sh: could not install atheris: the fuzz run installs it" >&2
fi
phase "test: the test extras (ray, pytest, atheris)"
cmake --build "$BUILD"
phase "test: build the tests and benchmarks"

tier=(-LE extended)
((EXTENDED)) && tier=()
rm -rf "$BUILD/test-evidence"
ctest_rc=0
(cd "$BUILD" && ctest --output-on-failure -j2 "${tier[@]}" --output-junit ctest.xml) || ctest_rc=$?
phase "test: ctest"
if ((ctest_rc)); then
  echo "test.sh: ctest failed (above; each failing test's pt2diff runs are kept in $BUILD/test-evidence/)" >&2
  exit "$ctest_rc"
fi
# The fuzz targets' clang build (scripts/fuzz.sh), then the sanitizer build (scripts/sanitize.sh), after ctest
# and not beside it: ctest keeps both cores busy. Built at idle priority beside it, they slowed the tests (the
# worker servers are sessions of their own, and the kernel's autogroups share the CPU between sessions whatever a
# process's priority): ctest 1116 s -> 1295 s cold, the whole command 30 s shorter only (docs/testing.md).
if ((FUZZ)); then "$ROOT/scripts/fuzz.sh" --build-only; phase "test: fuzz build (clang)"; fi
if ((SANITIZE)); then "$ROOT/scripts/sanitize.sh" --build-only; phase "test: sanitizer build"; fi

# The short fuzz run (one single-threaded process per target, the archive fuzzer longest) beside the
# sanitizer tests: the core the fuzzers leave runs ctest. Its output follows the sanitizer tests'.
fuzz_log=$BUILD/fuzz-run.log
fuzz_pid=""
if ((FUZZ)); then
  "$ROOT/scripts/fuzz.sh" > "$fuzz_log" 2>&1 &
  fuzz_pid=$!
fi
sanitize_rc=0
if ((SANITIZE)); then
  "$ROOT/scripts/sanitize.sh" || sanitize_rc=$?
  phase "test: sanitizer ctest (the fuzz run beside it)"
fi
if [[ -n "$fuzz_pid" ]]; then
  fuzz_rc=0
  wait "$fuzz_pid" || fuzz_rc=$?
  cat "$fuzz_log"
  phase "test: the rest of the fuzz run"
  ((fuzz_rc == 0)) || { echo "test.sh: the fuzz run failed (above)" >&2; exit 1; }
fi
((sanitize_rc == 0)) || { echo "test.sh: the sanitizer tests failed (above)" >&2; exit 1; }
echo "==> the run against the budget (tests/suite_budget.tsv; docs/testing.md)"
"$PYTHON" "$ROOT/tests/suite_budget.py" --measured "$BUILD" || true
