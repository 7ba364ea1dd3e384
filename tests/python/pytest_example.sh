#!/usr/bin/env bash
# Runs docs/examples/pytest as a user would, with pytest, twice: with the eager backend (every test must
# pass) and with a planted fault (the two assert_agrees tests must fail, naming the op, its source line,
# the hint and the repro command). Usage: pytest_example.sh PYTHON PACKAGE_DIR SOURCE_DIR
# (PACKAGE_DIR: where `import pt2diff` finds the package, BUILD/python). Exit 77 (skipped) without pytest:
# it is a test extra, which scripts/test.sh installs. PT2DIFF_DEVICE=cuda (scripts/gpu_test.sh) runs the
# example with its model and inputs on the GPU, and checks the runs were there.
set -euo pipefail
python=$1 package=$2 src=$3
if ! "$python" -c "import pytest" 2>/dev/null; then
  echo "pytest is not installed in $python (a test extra: scripts/test.sh installs it)"; exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/docs/examples/pytest" "$work/example"
run() { (cd "$work/example" && PYTHONPATH="$package" "$python" -m pytest -p no:cacheprovider -q "$@" .); }

PT2DIFF_COMPILED=eager run > "$work/pass.log" 2>&1 || { cat "$work/pass.log"; echo "the eager run failed"; exit 1; }
grep -qE "^3 passed" "$work/pass.log" || { cat "$work/pass.log"; exit 1; }
echo "eager: 3 tests passed"

if PT2DIFF_COMPILED="fault:linear:scale=0.05" run > "$work/fail.log" 2>&1; then
  cat "$work/fail.log"; echo "the planted fault did not fail the tests"; exit 1
fi
cat "$work/fail.log"
grep -qE "^2 failed, 1 passed" "$work/fail.log" || { echo "expected 2 failed, 1 passed"; exit 1; }
for expected in "AssertionError: pt2diff: the compiled graph does not agree with the reference" \
                "output linear_1 diverges (" "linear (aten.linear.default) at " "test_model_accuracy.py:" \
                "hint dtype_promotion (not_explained_by_promotion)" "repro: pt2diff " \
                "(<ExportedProgram> with <Python inputs>, compiled = fault: scale by 1+0.05 at linear"; do
  grep -qF -- "$expected" "$work/fail.log" || { echo "missing in the failure message: $expected"; exit 1; }
done
echo "planted fault: the pytest example fails naming the op, its source line, the hint and the repro"
