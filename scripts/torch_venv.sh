#!/usr/bin/env bash
# A second torch for `pt2diff recheck`'s test (tests/engine/upstream/test_recheck_torches.py) and for trying recheck by
# hand: a venv with torch==VERSION from the package registry, kept in $PT2DIFF_HOME/torch-VERSION (default
# ~/.cache/pt2diff) like the project's own venv. Idempotent; prints the venv's Python on stdout, progress on stderr.
#
#   scripts/torch_venv.sh 2.14.1      # -> /root/.cache/pt2diff/torch-2.14.1/bin/python
#
# Cold it costs 69 s on the 2-core machine for 2.14.1 (a CUDA build, 5.5 GB in the venv; torch runs on the CPU
# without a GPU). Not part of setup.sh: nothing but recheck's test needs it.
set -euo pipefail
VERSION=${1:?"usage: scripts/torch_venv.sh VERSION (a torch release: 2.14.1)"}
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=$PT2DIFF_HOME/torch-$VERSION
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$VERSION')" 2>/dev/null; then
  echo "torch_venv.sh: creating $VENV with torch==$VERSION" >&2
  mkdir -p "$PT2DIFF_HOME"
  rm -rf "$VENV.partial"
  python3 -m venv "$VENV.partial"
  "$VENV.partial/bin/pip" install -q --disable-pip-version-check "torch==$VERSION" numpy >&2
  rm -rf "$VENV"
  # A venv's scripts name its own path: made under .partial so that a cut-off install is never taken as done,
  # then moved, its Python found through the new path (bin/python is a link to the base interpreter).
  mv "$VENV.partial" "$VENV"
  sed -i "s|$VENV.partial|$VENV|g" "$VENV/bin/activate" "$VENV/pyvenv.cfg" 2>/dev/null || true
fi
echo "$VENV/bin/python"
