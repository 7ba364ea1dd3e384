"""Builds the native half of the pt2diff package (pt2diff._pt2diff) with the project's CMake build.

    pip install --no-build-isolation ./python          # from a clone, into the venv that has torch

pt2diff is built against the torch of the Python that runs pip, so build isolation (a fresh environment
without that torch) is off. The CMake build goes to $PT2DIFF_BUILD_DIR when set (an existing build tree: only
what changed is rebuilt), else to a tree kept between installs, one per source tree, Python and torch
(~/.cache/pt2diff/pip-build/HASH, under $XDG_CACHE_HOME when set): a second install with nothing changed
compiles nothing. $PT2DIFF_NATIVE_MODULE names a module CMake has
already built (scripts/setup.sh: it builds first, then installs with it); nothing is compiled then.
$PT2DIFF_NO_NATIVE_MODULE=1 installs the pure-Python packages only (`import pt2diff` then says what is missing).
Metadata and the pure-Python packages are in pyproject.toml.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeModule(Extension):
    def __init__(self):
        super().__init__("pt2diff._pt2diff", sources=[])


def kept_build_dir(torch_version: str) -> str:
    """The CMake tree pip installs build in, kept between installs: pip's own build folder is new each time, so
    a reinstall would compile everything again. One per source tree, Python and torch version."""
    import hashlib
    key = hashlib.sha256("\0".join([ROOT, sys.executable, torch_version]).encode()).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "pt2diff", "pip-build", key)


class BuildWithCMake(build_ext):
    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.environ.get("PT2DIFF_NATIVE_MODULE") or self._cmake_build(), target)

    def _cmake_build(self) -> str:
        if not os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")):
            sys.exit(f"pt2diff: {ROOT} is not the pt2diff source tree: run pip install on the clone's python/ folder")
        try:
            import torch  # noqa: F401
        except ImportError:
            sys.exit("pt2diff: this Python has no torch: pt2diff builds against the torch of the Python that runs pip; "
                     "install torch, then pip install --no-build-isolation ./python")
        build = os.environ.get("PT2DIFF_BUILD_DIR") or kept_build_dir(torch.__version__)
        if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                                   f"-DPT2DIFF_PYTHON={sys.executable}", "-DPT2DIFF_BUILD_TESTS=OFF",
                                   "-DPT2DIFF_BUILD_BENCH=OFF"])
        subprocess.check_call(["cmake", "--build", build, "--target", "pt2diff_python"])
        built = glob.glob(os.path.join(build, "python", "pt2diff", "_pt2diff*.so"))
        if not built:
            sys.exit(f"pt2diff: CMake did not build the Python module in {build}: are Python's headers installed "
                     "(apt-get install python3-dev)? The configure output says")
        return built[0]


native = [] if os.environ.get("PT2DIFF_NO_NATIVE_MODULE") == "1" else [CMakeModule()]
setup(ext_modules=native, cmdclass={"build_ext": BuildWithCMake})
