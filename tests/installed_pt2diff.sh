# Sourced by the out-of-tree build tests (consumer/run.sh, gtest_example/run.sh) with BUILD_DIR PYTHON
# SOURCE_DIR as "$@": installs pt2diff from BUILD_DIR into a temporary prefix, as a user would, and sets
# build, python, src, work (removed on exit), torch_prefix and launcher (ccache when there is one).
build=$1 python=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
