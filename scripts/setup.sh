#!/usr/bin/env bash
# Sets up pt2diff on a Debian machine (as root) and builds it; idempotent and fast when nothing changed.
#
#   scripts/setup.sh            install what is missing, build the CLI, run `pt2diff inspect` and the main job on a fixture
#   scripts/setup.sh --no-run   the same without the demo run (used by scripts/test.sh)
#   scripts/setup.sh --python /path/to/python   (or PT2DIFF_PYTHON=/path/to/python scripts/setup.sh)
#                               build against the torch that interpreter already has (2.11 to 2.14, CPU or
#                               CUDA), as is: no venv, nothing installed into it, no package registry needed
#
# The venv (torch==2.13.0) and the ccache directory live outside the clone, in $PT2DIFF_HOME
# (default ~/.cache/pt2diff), so fresh clones reuse them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PT2DIFF_HOME=${PT2DIFF_HOME:-${HOME:-/root}/.cache/pt2diff}
VENV=${PT2DIFF_VENV:-$PT2DIFF_HOME/venv}
BUILD=${PT2DIFF_BUILD_DIR:-$ROOT/build}
TORCH_VERSION=2.13.0
export CCACHE_DIR=${CCACHE_DIR:-$PT2DIFF_HOME/ccache}
RUN_DEMO=1
PYTHON=${PT2DIFF_PYTHON:-}
while (($#)); do
  case "$1" in
    --no-run) RUN_DEMO=0 ;;
    --python) PYTHON=${2:?"--python needs the path of a Python that has torch"}; shift ;;
    --python=*) PYTHON=${1#--python=} ;;
    *) echo "setup.sh: unknown argument '$1' (--no-run, --python PATH)" >&2; exit 2 ;;
  esac
  shift
done

say() { [[ -t 1 ]] && printf '\033[1m==> %s\033[0m\n' "$*" || printf '==> %s\n' "$*"; }
# Each phase's wall time, one "NAME<TAB>SECONDS" line in $PT2DIFF_PHASES (default BUILD/phases.tsv, started
# afresh by the script that owns it): python3 bench/test_time.py BUILD prints them (docs/testing.md).
if [[ -z "${PT2DIFF_PHASES:-}" ]]; then
  export PT2DIFF_PHASES=$BUILD/phases.tsv
  mkdir -p "$BUILD" && : > "$PT2DIFF_PHASES"
fi
source "$ROOT/scripts/phases.sh"

# --- Debian packages ---------------------------------------------------------------------------------
packages=(g++ ccache libeigen3-dev libboost-graph-dev libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev
          libgmock-dev libbenchmark-dev python3-dev)
command -v cmake >/dev/null || packages+=(cmake)
command -v ninja >/dev/null || packages+=(ninja-build)
command -v python3 >/dev/null || packages+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z "$PYTHON" ]]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  elif ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } 2>/dev/null; then
    # A user's machine may have the libraries from elsewhere (or no registry): CMake says what is really missing.
    say "could not install ${missing[*]}; going on (CMake names anything the build really lacks)"
  fi
fi

phase "setup: Debian packages"

if [[ -n "$PYTHON" ]]; then
  # --- the user's torch, as is ---------------------------------------------------------------------------
  torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null) || {
    echo "setup.sh: $PYTHON cannot import torch: point --python (or PT2DIFF_PYTHON) at the Python that has it" >&2
    exit 2
  }
  case "$torch_version" in
    2.11.*|2.12.*|2.13.*|2.14.*) say "using torch $torch_version from $PYTHON as is (nothing is installed into it)" ;;
    *) say "torch $torch_version from $PYTHON: pt2diff is built and tested against 2.11 to 2.14; trying anyway" ;;
  esac
else
  # --- the venv with torch -------------------------------------------------------------------------------
  if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
    say "creating $VENV with torch==$TORCH_VERSION"
    mkdir -p "$PT2DIFF_HOME"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" numpy jsonschema
  elif ! "$VENV/bin/python" -c "import jsonschema" 2>/dev/null; then
    say "adding jsonschema to $VENV (the tests validate JSON reports with it)"
    "$VENV/bin/pip" install -q --disable-pip-version-check jsonschema
  fi

  PYTHON="$VENV/bin/python"
  INSTALL_PACKAGES=1
fi

phase "setup: Python (venv and torch)"

# --- configure and build -------------------------------------------------------------------------------
configured_python=$(sed -n 's/^PT2DIFF_PYTHON:FILEPATH=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
if [[ ! -f "$BUILD/build.ninja" || "$configured_python" != "$PYTHON" ]]; then
  say "configuring $BUILD (torch from $PYTHON)"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT2DIFF_PYTHON="$PYTHON" >/dev/null
fi
phase "setup: configure"
# The CLI and the Python module in one build: ninja keeps both cores busy across the two (built one after the other,
# one core idled through the CLI's last objects and link).
targets=(pt2diff_cli)
if grep -q '^build python/pt2diff/_pt2diff' "$BUILD/build.ninja" 2>/dev/null; then
  targets+=(pt2diff_python)
fi
say "building ${targets[*]}"
cmake --build "$BUILD" --target "${targets[@]}"
phase "setup: build the CLI and the Python module"

# --- the Python packages (python/: pt2diff with its native module, pt2diff_capture, pt2diff_worker) ----
# Into the venv only (a --python interpreter is left as is: PYTHONPATH=$BUILD/python imports pt2diff).
# Reinstalled only when python/ or the module changed (a hash of them, kept in the venv). The venv is
# shared by clones: the packages are copied in, never linked to this clone. Built offline from a copy of
# python/ with the module CMake just built (python/setup.py copies it), so no build files land in the
# clone; without setuptools in the venv the packages are copied by hand.
if ((${INSTALL_PACKAGES:-0})); then
  module=$(ls "$BUILD"/python/pt2diff/_pt2diff*.so 2>/dev/null | head -n1 || true)
  capture_hash=$( { cd "$ROOT/python" && find . -type f \( -name '*.py' -o -name '*.toml' \) -not -path '*/__pycache__/*' \
                 | LC_ALL=C sort | xargs sha256sum; [[ -z "$module" ]] || sha256sum < "$module"; } | sha256sum | cut -d' ' -f1)
  capture_stamp="$VENV/.pt2diff_capture.sha256"
  if [[ "$(cat "$capture_stamp" 2>/dev/null)" != "$capture_hash" ]]; then
    say "installing pt2diff, pt2diff_capture and pt2diff_worker into $VENV"
    if [[ -n "$module" ]]; then native=(PT2DIFF_NATIVE_MODULE="$module"); else native=(PT2DIFF_NO_NATIVE_MODULE=1); fi
    if "$VENV/bin/python" -c "import setuptools" 2>/dev/null; then
      capture_src=$(mktemp -d)
      cp -r "$ROOT/python/." "$capture_src"
      env "${native[@]}" "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-build-isolation \
        --force-reinstall "$capture_src" || { rm -rf "$capture_src"; exit 1; }
      rm -rf "$capture_src"
    else
      site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
      for package in pt2diff_capture pt2diff_worker pt2diff; do
        rm -rf "${site:?}/$package"
        cp -r "$ROOT/python/$package" "$site/"
        rm -rf "$site/$package/__pycache__"
      done
      [[ -z "$module" ]] || cp "$module" "$site/pt2diff/"
    fi
    echo "$capture_hash" > "$capture_stamp"
  fi
fi

phase "setup: install the Python packages"

if ((RUN_DEMO)); then
  say "pt2diff inspect fixtures/bf16_block.pt2 fixtures/bf16_block_inputs.pt"
  "$BUILD/pt2diff" inspect "$ROOT/fixtures/bf16_block.pt2" "$ROOT/fixtures/bf16_block_inputs.pt"
  say "pt2diff fixtures/bf16_block.pt2 fixtures/bf16_block_inputs.pt   (the main job)"
  "$BUILD/pt2diff" "$ROOT/fixtures/bf16_block.pt2" "$ROOT/fixtures/bf16_block_inputs.pt"
fi
((RUN_DEMO)) && phase "setup: the demo run"
exit 0
