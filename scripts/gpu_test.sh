#!/usr/bin/env bash
# The GPU suite, for anyone with a CUDA machine (the CPU CI, scripts/test.sh, does not run it):
#
#   scripts/gpu_test.sh --python /path/to/python   build against that Python's torch (a CUDA wheel, 2.11-2.14)
#                                                  as is, then run every GPU check; PT2DIFF_PYTHON works too
#   scripts/gpu_test.sh --part N [--python ...]    only part N (1 to 11) of the checks: each part, with the
#                                                  build, fits in one 10-minute command on an H200
#   scripts/gpu_test.sh --list                     the parts and their checks
#
# Exits 0 with a line saying so when that torch sees no CUDA device. Docs: docs/testing.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PART=""  # empty: every part
LIST=0
while (($#)); do
  case "$1" in
    --python) export PT2DIFF_PYTHON=${2:?"--python needs the path of a Python that has a CUDA torch"}; shift ;;
    --python=*) export PT2DIFF_PYTHON=${1#--python=} ;;
    --part) PART=${2:?"--part needs 1 to 11"}; shift ;;
    --part=*) PART=${1#--part=} ;;
    --list) LIST=1 ;;
    *) echo "gpu_test.sh: unknown argument '$1' (--python PATH, --part N, --list)" >&2; exit 2 ;;
  esac
  shift
done
case "$PART" in ""|[1-9]|10|11) ;; *) echo "gpu_test.sh: --part $PART: the parts are 1 to 11 (--list)" >&2; exit 2 ;; esac
PYTHON=${PT2DIFF_PYTHON:-$(command -v python3)}
export PT2DIFF_PYTHON=$PYTHON
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}

if ((LIST)); then :
elif ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu_test.sh: $PYTHON has no torch that sees a CUDA device: GPU suite skipped"
  exit 0
fi
if ! ((LIST)); then
  "$PYTHON" -c 'import torch; print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")'
  "$ROOT/scripts/setup.sh" --no-run
  echo "--- set-up and build: $SECONDS s"  # a part's budget is one 10-minute command, the build included
fi
cli="$BUILD/pt2diff"
fixtures="$ROOT/fixtures"
failed=()
# Each check belongs to one part; a part's checks take at most about 8 minutes on an H200 (docs/testing.md).
check() {  # PART NAME COMMAND...: runs one check of the selected part, keeps going, remembers failures
  local part=$1 name=$2; shift 2
  if ((LIST)); then echo "part $part: $name"; return; fi
  [[ -z "$PART" || "$PART" == "$part" ]] || return 0
  local start=$SECONDS
  echo "--- $name"
  if "$@"; then echo "--- $name: passed ($((SECONDS - start)) s)"; else failed+=("$name"); echo "--- $name: FAILED ($((SECONDS - start)) s)"; fi
}
export PT2DIFF_TEST_DEVICE=cuda TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
# A failing check's Python tests print the pt2diff runs they made and keep their output and reports here
# (tests/python/evidence.py): the folder outlives the check's temporary folders.
export PT2DIFF_TEST_EVIDENCE=${PT2DIFF_TEST_EVIDENCE:-$BUILD/test-evidence-gpu}
trap 'rm -rf "$TORCHINDUCTOR_CACHE_DIR"' EXIT

check 1 "the CLI's libstdc++ calls bind to libstdc++ (the torch 2.11+cu130 crash)" \
  "$ROOT/tests/linked_symbols_check.sh" "$cli" "$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)"
check 1 "pt2diff's eager and fp64 runs on CUDA are PyTorch's (bit for bit; float64 to 1e-12), fp64 on the CPU when asked or short of memory, TF32 explained" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_engine_cuda.py"
check 1 "Inductor on CUDA gives torch.compile's numbers bit for bit" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/engine/backends/test_inductor_agreement.py::InductorAgreement::test_mlp" \
  "$ROOT/tests/engine/backends/test_inductor_agreement.py::InductorAgreement::test_attention_core" \
  "$ROOT/tests/engine/backends/test_inductor_agreement.py::InductorAgreement::test_bf16_block_core"
check 1 "the exploded compile's distinct ops give the whole exploded graph's numbers bit for bit on Triton" \
  "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_distinct_ops_cuda.py"
check 1 "a planted Inductor bug (fp32 matmuls in bf16) is localized on CUDA" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/engine/localize/test_inductor_localization.py::Mlp"
check 2 "the kernel table reads Triton's wrapper code: the first failing kernel, the op inside it and a NaN's origin" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/engine/backends/test_kernel_map.py"
check 2 "the smallest eager set on Triton: found, verified, and the printed torch.compiler.disable lines work on the module tree" \
  "$PYTHON" "$ROOT/tests/engine/localize/workaround.py" "$cli" "$fixtures"
check 1 "TF32 and matmul precision reach the worker's CUDA kernels" \
  "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_tf32_settings_cuda.py"
check 4 "Python on the GPU: a bf16 model and its inputs on cuda diffed in memory (clean, a planted fault, the CLI beside it, device errors)" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" PYTHONPATH="$BUILD/python" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_python_cuda.py"
pytest_example() {  # pytest is the user's: without it in that Python the check says so and is not counted
  "$PYTHON" -c "import pytest" 2>/dev/null || { echo "skipped: $PYTHON has no pytest"; return 0; }
  PT2DIFF_DEVICE=cuda "$ROOT/tests/python/pytest_example.sh" "$PYTHON" "$BUILD/python" "$ROOT"
}
check 4 "the pytest example with its model and inputs on cuda: passes clean, fails naming the op on a planted fault" pytest_example
check 4 "capture on the GPU: a bf16 decoder through the capture backend and an fp16-autocast conv net through export_module, diagnosed on the GPU and with none visible" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_capture_cuda.py"
check 3 "graphs that write in place on CUDA: written inputs and buffers judged, planted reinplaced-scatter and write-back bugs localized, clean KV cache, train-mode batch norm and view writes agree" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/engine/localize/test_mutation_inductor.py"
check 3 "the node verdict on CUDA: GPU-exported bf16 and fp16 models clean at every node, planted absorbed bugs flagged and named" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/device/test_node_verdict_cuda.py"
check 8 "training steps on CUDA: bf16 steps exported there, captured bit-exact, clean steps agree, planted backward bugs named at their backward node and forward line" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" "$ROOT/tests/engine/localize/test_training_inductor.py"
check 8 "dynamic shapes on CUDA: dims compiled symbolic, a tail-only and a dynamic-only planted bug found by the size sweep and named, clean dynamic graphs agree at every default size" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" PYTHONPATH="$BUILD/python" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/engine/localize/test_sizes_inductor.py"
check 9 "recheck on CUDA: the build's torch and one with a planted lowering, the regression and bisection named, test_repro.py of the window passing and failing" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" PYTHONPATH="$BUILD/python" PT2DIFF_SECOND_TORCH="$PYTHON" "$PYTHON" \
  "$ROOT/tests/python/run_tests.py" "$ROOT/tests/engine/upstream/test_recheck_torches.py"
check 10 "the repro's PyTorch unit test on CUDA: a model exported there, planted op-level and fused-window bugs named, test_repro.py failing under the planted torch and passing under the stock one" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" PYTHONPATH="$BUILD/python" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/engine/upstream/test_repro_unit_tests.py"
check 11 "real upstream bugs on CUDA: the corpus (fixtures/upstream) exported on the GPU, the write after read named and its pass found by the compiler search, every reproducing bug named" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" PT2DIFF_UPSTREAM_DEVICE=cuda PYTHONPATH="$ROOT/python" "$PYTHON" \
  "$ROOT/tests/python/run_tests.py" "$ROOT/tests/engine/upstream/test_upstream_corpus.py"
# AOTInductor on CUDA in three parts: its package builds (115-121 s) and instrumented AOTI compiles (102-105 s) are
# minutes each. All of it with the build was killed at 600 s on a fresh H200 (2026-12-04), and so were the planted
# package's two checks together: the build, that package (115 s) and check 3 (282 s) left check 4 unfinished.
check 5 "AOTInductor on CUDA: a bf16 decoder's package agrees, --compiled aoti's Triton kernel table, the device and guard lines" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/device/test_aoti_cuda.py::CleanPackage" "$ROOT/tests/device/test_aoti_cuda.py::CompiledAoti"
check 6 "AOTInductor on CUDA: a planted lowering bug named at its kernel and op through the twin, its Triton source in --repro" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/device/test_aoti_cuda.py::PlantedPackage::test_planted_bug_named_at_its_kernel_and_op" \
  "$ROOT/tests/device/test_aoti_cuda.py::PlantedPackage::test_repro_keeps_the_kernels_triton_source"
check 7 "AOTInductor on CUDA: the planted package with the stock compiler as twin gives the not-reproduced line" \
  env PT2DIFF_CLI="$cli" PT2DIFF_FIXTURES="$fixtures" "$PYTHON" "$ROOT/tests/python/run_tests.py" \
  "$ROOT/tests/device/test_aoti_cuda.py::PlantedPackage::test_stock_compiler_as_twin_not_reproduced"

((LIST)) && exit 0
what="GPU suite${PART:+, part $PART}"
if ((${#failed[@]})); then
  printf '%s: %d failed:\n' "$what" "${#failed[@]}"; printf '  %s\n' "${failed[@]}"
  echo "the failing tests' pt2diff runs and reports: $PT2DIFF_TEST_EVIDENCE"
  exit 1
fi
echo "$what: every check passed"
