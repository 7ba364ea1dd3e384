#!/usr/bin/env bash
# Builds docs/examples/gtest exactly as a user would, out of tree against pt2diff installed from BUILD,
# and runs it twice on fixtures/mlp.pt2: with the eager backend (must pass) and with a planted fault
# (must fail, naming the op and its source line). Usage: run.sh BUILD_DIR PYTHON SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../installed_pt2diff.sh" "$@"
cp -r "$src/docs/examples/gtest" "$work/example"
cmake -S "$work/example" -B "$work/build" -G Ninja "${launcher[@]}" -DCMAKE_PREFIX_PATH="$work/prefix;$torch_prefix" \
      -DMODEL_ARCHIVE="$src/fixtures/mlp.pt2" -DMODEL_INPUTS="$src/fixtures/mlp_inputs.pt" >/dev/null
cmake --build "$work/build" > "$work/log" 2>&1 || { grep -E "error" "$work/log"; exit 1; }
PT2DIFF_COMPILED=eager "$work/build/model_accuracy_test" > "$work/pass.log" 2>&1 || { cat "$work/pass.log"; echo "the eager run failed"; exit 1; }
grep -q "PASSED.*2 tests" "$work/pass.log" || { cat "$work/pass.log"; exit 1; }
echo "eager: 2 tests passed"
if PT2DIFF_COMPILED="fault:linear:scale=0.05" "$work/build/model_accuracy_test" > "$work/fail.log" 2>&1; then
  cat "$work/fail.log"; echo "the planted fault did not fail the test"; exit 1
fi
cat "$work/fail.log"
for expected in "does not agree with the reference" "linear (aten.linear.default) at " "make_fixtures.py:" \
                "hint dtype_promotion (not_explained_by_promotion)"; do
  grep -qF "$expected" "$work/fail.log" || { echo "missing in the failure message: $expected"; exit 1; }
done
echo "planted fault: the out-of-tree example fails naming the op and its source line"
