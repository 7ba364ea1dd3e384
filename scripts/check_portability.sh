#!/usr/bin/env bash
# Runs the whole ctest suite under every CPU capability ATen can use on this machine and under one and two
# OpenMP threads, and prints a table of the test counts per setting. Run it before a change to fixtures,
# kernels or numerics lands (docs/testing.md): a test that passes only under the machine's default
# kernels is a test of the machine.
#
#   scripts/check_portability.sh              every setting (sets up and builds first, as scripts/test.sh)
#   scripts/check_portability.sh -L engine    extra arguments go to every ctest run
#
# Exits non-zero if any setting has a failing test; each setting's log is kept in $BUILD/portability/.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}

"$ROOT/scripts/setup.sh" --no-run || exit 1
cmake --build "$BUILD" || exit 1

# ATen's avx512 kernels need AVX-512 F, BW, VL and DQ; avx2 needs AVX2 and FMA.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
settings=("ATEN_CPU_CAPABILITY=default")
if has avx2 fma; then settings+=("ATEN_CPU_CAPABILITY=avx2"); else echo "skipping avx2: this CPU lacks AVX2/FMA"; fi
if has avx512f avx512bw avx512vl avx512dq; then settings+=("ATEN_CPU_CAPABILITY=avx512")
else echo "skipping avx512: this CPU lacks AVX-512 F/BW/VL/DQ"; fi
settings+=("OMP_NUM_THREADS=1" "OMP_NUM_THREADS=2")

logs="$BUILD/portability"
mkdir -p "$logs"
rows=() status=0
for s in "${settings[@]}"; do
  log="$logs/${s//[=]/-}.log"
  echo "==> ctest with $s"
  start=$(date +%s)
  # PyTorch's Inductor caches are not keyed by ATEN_CPU_CAPABILITY (code cached while vectorizing for
  # AVX-512 is reused under `default` and fails to build), so each setting gets Inductor caches of its
  # own, for the tests' own torch.compile calls as for pt2diff's worker.
  cache="$logs/inductor-${s//[=]/-}"
  (cd "$BUILD" && env "$s" TORCHINDUCTOR_CACHE_DIR="$cache" ctest -j2 --output-on-failure "$@") >"$log" 2>&1
  rc=$?
  seconds=$(( $(date +%s) - start ))
  summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  [[ -n "$summary" ]] || summary="no summary (ctest exit $rc)"
  skipped=$(grep -c '\*\*\*Skipped\|Not Run' "$log")
  rows+=("$(printf '%-28s %-52s %3s skipped  %5ss' "$s" "$summary" "$skipped" "$seconds")")
  ((rc == 0)) || { status=1; grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted)' "$log"; }
done

echo
echo "$(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
printf '%s\n' "${rows[@]}"
exit $status
