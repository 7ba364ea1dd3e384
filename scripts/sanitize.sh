#!/usr/bin/env bash
# Builds the loader tests and the CLI a second time under AddressSanitizer + UndefinedBehaviorSanitizer (in
# $BUILD-sanitize) and runs them (ctest -L sanitize). scripts/test.sh runs it; on its own:
#
#   scripts/sanitize.sh               build (if needed) and run the sanitizer tests
#   scripts/sanitize.sh --build-only  only build (scripts/test.sh builds, then runs the tests beside the fuzz run)
#
# clang when it is there (scripts/fuzz.sh installs it), GCC otherwise: the same sanitizers.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
ASAN_BUILD=$BUILD-sanitize
PYTHON=${PT2DIFF_PYTHON:-$VENV/bin/python}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}
BUILD_ONLY=0
case "${1:-}" in
  "") ;;
  --build-only) BUILD_ONLY=1 ;;
  *) echo "sanitize.sh: unknown argument '$1' (--build-only)" >&2; exit 2 ;;
esac

if [[ ! -f "$ASAN_BUILD/build.ninja" ]]; then
  # Line tables only (-g1), as the main build: ASan and UBSan reports keep file:line, and full -g about
  # doubles the compile time of the template-heavy files (this build is a large part of the test command).
  # clang at -O0 with ASan and UBSan compiles the engine's files 1.6-1.8x faster than GCC (docs/testing.md).
  sanitizer_cxx=()
  command -v clang++ >/dev/null && sanitizer_cxx=(-DCMAKE_CXX_COMPILER=clang++)
  cmake -S "$ROOT" -B "$ASAN_BUILD" -G Ninja "${sanitizer_cxx[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
        -DPT2DIFF_SANITIZE=ON -DPT2DIFF_BUILD_BENCH=OFF -DPT2DIFF_PYTHON="$PYTHON" >/dev/null
fi
cmake --build "$ASAN_BUILD" --target loader_tests pt2diff_cli
((BUILD_ONLY)) && exit 0
# libtorch is not built with ASan: its allocations at exit are reported as leaks we cannot fix.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$ASAN_BUILD" && ctest --output-on-failure -j2 -L sanitize --output-junit ctest.xml
