#!/usr/bin/env bash
# Installs pt2diff from BUILD into a temporary prefix, builds tests/consumer against it with
# find_package(pt2diff), and runs it on a fixture. Usage: run.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../installed_pt2diff.sh" "$@"
cmake -S "$src/tests/consumer" -B "$work/build" -G Ninja "${launcher[@]}" \
      -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" >/dev/null
cmake --build "$work/build" > "$work/log" 2>&1 || { grep -E "error" "$work/log"; exit 1; }
"$work/build/consumer" "$src/fixtures/bf16_block.pt2" "$src/fixtures/bf16_block_inputs.pt"
