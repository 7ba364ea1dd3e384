#!/usr/bin/env bash
# Fuzzes the archive loader and the inputs reader (libFuzzer + ASan/UBSan), and the batch's corpus sources
# (capture index.json, manifests: pt2diff_batch.cases, with atheris) (docs/security.md).
#
#   scripts/fuzz.sh                         the short run scripts/test.sh does: every kept crash, then
#                                           each target for a fixed number of inputs from a fixed seed
#   scripts/fuzz.sh --seconds 3600 [TARGET...]   a campaign: TARGET (archive_fuzzer, inputs_fuzzer,
#                                           sources_fuzzer) or all three; the log's coverage curve at the end
#   scripts/fuzz.sh --build-only            install clang if needed and build the targets, run nothing
#                                           (scripts/test.sh builds first, then runs beside the sanitizer tests)
#
# Builds tests/fuzz/ with clang in $BUILD-fuzz. Corpora start from the fixtures; what a campaign finds
# (new coverage) stays in $BUILD-fuzz/corpus/TARGET, crashes in $BUILD-fuzz/artifacts/TARGET: copy a
# crash to tests/fuzz/crashes/TARGET/ once it is fixed, and every later run replays it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
FUZZ=$BUILD-fuzz
PYTHON=${PT2DIFF_PYTHON:-$VENV/bin/python}
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}
RUNS=""  # per target below: about a minute each on 2 cores
SECONDS_LIMIT=""
BUILD_ONLY=0
targets=()
while (($#)); do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --seconds) SECONDS_LIMIT=$2; shift ;;
    --build-only) BUILD_ONLY=1 ;;
    archive_fuzzer|inputs_fuzzer|sources_fuzzer) targets+=("$1") ;;
    *) echo "fuzz.sh: unknown argument '$1' (--runs N, --seconds S, --build-only, archive_fuzzer, inputs_fuzzer, sources_fuzzer)" >&2; exit 2 ;;
  esac
  shift
done
((${#targets[@]})) || targets=(archive_fuzzer inputs_fuzzer sources_fuzzer)
native=()  # the clang-built targets asked for
for t in "${targets[@]}"; do [[ "$t" == sources_fuzzer ]] || native+=("$t"); done

say() { [[ -t 1 ]] && printf '\033[1m==> %s\033[0m\n' "$*" || printf '==> %s\n' "$*"; }

if ((${#native[@]})) && ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  say "installing clang and libFuzzer (Debian packages clang, libclang-rt-dev)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  llvm=$(apt-cache depends clang | sed -n 's/.*Depends: clang-\([0-9]*\)$/\1/p' | sed -n 1p)  # Debian 12: 14
  apt-get install -y -qq --no-install-recommends clang "libclang-rt-$llvm-dev" >/dev/null
fi
if ((${#native[@]})) && [[ ! -f "$FUZZ/build.ninja" ]]; then
  say "configuring $FUZZ (clang, libFuzzer, ASan, UBSan)"
  CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$FUZZ" -G Ninja -DPT2DIFF_PYTHON="$PYTHON" >/dev/null
fi
if ((${#native[@]})); then
  say "building the fuzz targets"
  cmake --build "$FUZZ" --target "${native[@]}"
fi
((BUILD_ONLY)) && exit 0
if [[ " ${targets[*]} " == *" sources_fuzzer "* ]] && ! "$PYTHON" -c "import atheris, jsonschema" 2>/dev/null; then
  say "adding atheris (the Python fuzzer) to $("$PYTHON" -c 'import sys; print(sys.prefix)')"
  "$PYTHON" -m pip install -q --disable-pip-version-check atheris jsonschema
fi

mkdir -p "$FUZZ"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Each target is one single-threaded libFuzzer process: the targets run side by side (one core each), each
# with its own log; the script fails when either does.
fuzz_target() {  # TARGET: replay its kept crashes, then fuzz it; exit 1 on a finding
  local target=$1 seeds dict runs extra kept corpus artifacts limit rc
  case "$target" in
    archive_fuzzer) seeds=("$ROOT"/fixtures/*.pt2 "$ROOT"/fixtures/malformed/*.pt2 "$ROOT"/fixtures/torch-*/*.pt2); dict=archive.dict
                    runs=${RUNS:-20000}
                    extra=() ;;
    inputs_fuzzer) seeds=("$ROOT"/fixtures/*_inputs.pt "$ROOT"/fixtures/malformed/inputs_*.pt "$ROOT"/fixtures/torch-*/*_inputs.pt); dict=inputs.dict
                   runs=${RUNS:-3000}
                   extra=(-max_len=65536) ;;  # the 400 KB deep-list seed would make every mutation slow
    sources_fuzzer) seeds=("$ROOT"/tests/fuzz/seeds/sources/*); dict=sources.dict
                    runs=${RUNS:-5000}  # about 15 s
                    extra=(-max_len=4096) ;;
  esac
  local run=("$FUZZ/$target")
  [[ "$target" == sources_fuzzer ]] && run=("$PYTHON" "$ROOT/tests/fuzz/sources_fuzzer.py")
  kept=("$ROOT/tests/fuzz/crashes/$target"/*)
  if [[ -e "${kept[0]}" ]]; then
    say "$target: replaying ${#kept[@]} kept crashes"
    "${run[@]}" "${kept[@]}" > "$FUZZ/$target.replay.log" 2>&1 || { echo "fuzz.sh: a kept crash of $target fails again: $FUZZ/$target.replay.log"; return 1; }
  fi
  corpus=$FUZZ/corpus/$target artifacts=$FUZZ/artifacts/$target
  mkdir -p "$artifacts"
  if [[ -z "$SECONDS_LIMIT" ]]; then rm -rf "$corpus"; fi  # the short run starts from the seeds alone: the same every time
  mkdir -p "$corpus"
  cp -n "${seeds[@]}" "$corpus"/ 2>/dev/null || true
  limit=(-runs="$runs" -seed=1)
  [[ -n "$SECONDS_LIMIT" ]] && limit=(-max_total_time="$SECONDS_LIMIT")
  say "$target: ${limit[*]} from ${#seeds[@]} seeds"
  set +e
  if [[ -n "$SECONDS_LIMIT" ]]; then  # a campaign: each line stamped with its second, for the coverage curve
    "${run[@]}" "$corpus" -dict="$ROOT/tests/fuzz/$dict" "${limit[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 "${extra[@]}" \
      -timeout=30 -rss_limit_mb=8192 2>&1 | python3 "$ROOT/scripts/fuzz_curve.py" stamp > "$FUZZ/$target.log"
    rc=${PIPESTATUS[0]}
    python3 "$ROOT/scripts/fuzz_curve.py" table "$FUZZ/$target.log"
  else
    "${run[@]}" "$corpus" -dict="$ROOT/tests/fuzz/$dict" "${limit[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 "${extra[@]}" \
      -timeout=30 -rss_limit_mb=8192 > "$FUZZ/$target.log" 2>&1
    rc=$?
  fi
  set -e
  grep -E "^#[0-9]+ +(DONE|INITED)|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss|ERROR|SUMMARY|not a pt2diff" \
    "$FUZZ/$target.log" | tail -8 || true
  ((rc == 0)) || { echo "fuzz.sh: $target found a problem (exit $rc): see $FUZZ/$target.log and $artifacts"; return 1; }
}
pids=()
for target in "${targets[@]}"; do
  fuzz_target "$target" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
((failed == 0)) || exit 1
say "fuzzing: no crash, no stray exception"
