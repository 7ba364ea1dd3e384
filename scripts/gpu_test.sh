#!/usr/bin/env bash
# The GPU suite, for anyone with a CUDA machine (the CPU CI, scripts/test.sh, does not run it):
#
#   scripts/gpu_test.sh --python /path/to/python   build against that Python's torch (a CUDA wheel, 2.11-2.14)
#                                                  as is, then run every GPU check; PT2DIFF_PYTHON works too
#
# Exits 0 with a line saying so when that torch sees no CUDA device. Docs: docs/testing.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${1:-}" in
  --python) export PT2DIFF_PYTHON=${2:?"--python needs the path of a Python that has a CUDA torch"} ;;
  --python=*) export PT2DIFF_PYTHON=${1#--python=} ;;
  "") ;;
  *) echo "gpu_test.sh: unknown argument '$1' (--python PATH)" >&2; exit 2 ;;
esac
PYTHON=${PT2DIFF_PYTHON:-$(command -v python3)}
export PT2DIFF_PYTHON=$PYTHON
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu_test.sh: $PYTHON has no torch that sees a CUDA device: GPU suite skipped"
  exit 0
fi
"$PYTHON" -c 'import torch; print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")'

"$ROOT/scripts/setup.sh" --no-run
cli="$BUILD/pt2diff"
fixtures="$ROOT/fixtures"
failed=()
check() {  # NAME COMMAND...: runs one check, keeps going, remembers failures
  local name=$1; shift
  local start=$SECONDS
  echo "--- $name"
  if "$@"; then echo "--- $name: passed ($((SECONDS - start)) s)"; else failed+=("$name"); echo "--- $name: FAILED ($((SECONDS - start)) s)"; fi
}
export PT2DIFF_TEST_DEVICE=cuda TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$TORCHINDUCTOR_CACHE_DIR"' EXIT

check "the CLI's libstdc++ calls bind to libstdc++ (the torch 2.11+cu130 crash)" \
  "$ROOT/tests/linked_symbols_check.sh" "$cli" "$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
check "pt2diff's eager and fp64 runs on CUDA are PyTorch's (bit for bit; float64 to 1e-12), fp64 on the CPU when asked or short of memory, TF32 explained" \
  "$PYTHON" "$ROOT/tests/device/engine_cuda.py" "$cli" "$fixtures"
check "Inductor on CUDA gives torch.compile's numbers bit for bit" \
  "$PYTHON" "$ROOT/tests/engine/backends/inductor_agreement.py" "$cli" "$fixtures" mlp attention_core bf16_block_core
check "a planted Inductor bug (fp32 matmuls in bf16) is localized on CUDA" \
  "$PYTHON" "$ROOT/tests/engine/localize/inductor_localization.py" "$cli" "$fixtures" mlp
check "the kernel table reads Triton's wrapper code: the first failing kernel, the op inside it and a NaN's origin" \
  "$PYTHON" "$ROOT/tests/engine/backends/kernel_map.py" "$cli" "$fixtures"
check "the smallest eager set on Triton: found, verified, and the printed torch.compiler.disable lines work on the module tree" \
  "$PYTHON" "$ROOT/tests/engine/localize/workaround.py" "$cli" "$fixtures"
check "TF32 and matmul precision reach the worker's CUDA kernels" \
  "$PYTHON" "$ROOT/tests/device/tf32_settings_cuda.py"
check "the node verdict on CUDA: GPU-exported bf16 and fp16 models clean at every node, planted absorbed bugs flagged and named" \
  "$PYTHON" "$ROOT/tests/device/node_verdict_cuda.py" "$cli" "$fixtures"

if ((${#failed[@]})); then
  printf 'GPU suite: %d failed:\n' "${#failed[@]}"; printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "GPU suite: every check passed"
