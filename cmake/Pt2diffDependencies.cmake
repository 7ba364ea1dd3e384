# Finds torch (from the project venv's PyPI wheel) and the Debian -dev packages, failing early with
# a message that says what to install.

# --- torch -----------------------------------------------------------------------------------------
if(NOT Torch_DIR)
  if(NOT PT2DIFF_PYTHON)
    find_program(PT2DIFF_PYTHON NAMES python3 python)
  endif()
  execute_process(
    COMMAND "${PT2DIFF_PYTHON}" -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__)"
    OUTPUT_VARIABLE _torch_out ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _torch_rc EQUAL 0)
    message(FATAL_ERROR
      "pt2diff: torch is not importable by '${PT2DIFF_PYTHON}'.\n"
      "Run ./scripts/setup.sh (it creates a venv with torch==2.13.0), or configure with "
      "-DPT2DIFF_PYTHON=/path/to/venv/bin/python.")
  endif()
  string(REPLACE "\n" ";" _torch_lines "${_torch_out}")
  list(GET _torch_lines 0 _torch_prefix)
  list(GET _torch_lines 1 PT2DIFF_TORCH_VERSION)
  list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
  message(STATUS "pt2diff: torch ${PT2DIFF_TORCH_VERSION} from ${PT2DIFF_PYTHON}")
  # A CUDA wheel (+cu130...): its TorchConfig looks for a CUDA toolkit (FindCUDA) and libnvrtc.
  #  - FindCUDA takes the toolkit root from the nvcc on PATH; a wrapper script (/usr/local/bin/nvcc
  #    exec'ing /usr/local/cuda/bin/nvcc) makes that /usr/local, without cuda_runtime.h. Prefer
  #    CUDA_HOME, then /usr/local/cuda, as nvcc itself does.
  #  - a toolkit of the pip packages (nvcc, cudart) has no libnvrtc; the wheel's dependency
  #    nvidia-cuda-nvrtc has it, as libnvrtc.so.<major> only.
  execute_process(
    COMMAND "${PT2DIFF_PYTHON}" -c "import torch, importlib.util as u; s = u.find_spec('nvidia'); print(torch.version.cuda or 'none'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE _cuda_out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REPLACE "\n" ";" _cuda_lines "${_cuda_out}")
  set(_torch_cuda "")
  if(_cuda_lines AND NOT _cuda_lines MATCHES "^none")
    list(GET _cuda_lines 0 _torch_cuda)
  endif()
  if(_torch_cuda)
    if(NOT CUDA_TOOLKIT_ROOT_DIR)
      if(DEFINED ENV{CUDA_HOME} AND EXISTS "$ENV{CUDA_HOME}/include/cuda_runtime.h")
        set(CUDA_TOOLKIT_ROOT_DIR "$ENV{CUDA_HOME}" CACHE PATH "CUDA toolkit for the CUDA torch wheel")
      elseif(EXISTS "/usr/local/cuda/include/cuda_runtime.h")
        set(CUDA_TOOLKIT_ROOT_DIR "/usr/local/cuda" CACHE PATH "CUDA toolkit for the CUDA torch wheel")
      endif()
    endif()
    list(LENGTH _cuda_lines _n)
    if(_n GREATER 1)
      list(GET _cuda_lines 1 _nvidia_dir)
      string(REGEX MATCH "^[0-9]+" _cuda_major "${_torch_cuda}")
      find_library(CUDA_nvrtc_LIBRARY NAMES nvrtc libnvrtc.so.${_cuda_major}
                   PATHS "${CUDA_TOOLKIT_ROOT_DIR}/lib64" "${CUDA_TOOLKIT_ROOT_DIR}/lib"
                         "${_nvidia_dir}/cu${_cuda_major}/lib" "${_nvidia_dir}/cuda_nvrtc/lib" NO_DEFAULT_PATH)
    endif()
    message(STATUS "pt2diff: CUDA ${_torch_cuda} wheel; toolkit ${CUDA_TOOLKIT_ROOT_DIR}, nvrtc ${CUDA_nvrtc_LIBRARY}")
  endif()
endif()
# TorchConfig warns about kineto on CPU wheels; that is harmless.
find_package(Torch REQUIRED)

foreach(_header torch/csrc/utils/generated_serialization_types.h caffe2/serialize/inline_container.h
                torch/csrc/jit/serialization/import_read.h)
  unset(_found CACHE)
  find_path(_found NAMES ${_header} PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(NOT _found)
    message(FATAL_ERROR "pt2diff: the torch install lacks ${_header} (searched ${TORCH_INCLUDE_DIRS}). "
                        "Use the PyPI torch==2.13.0 wheel: ./scripts/setup.sh installs it.")
  endif()
endforeach()
unset(_found CACHE)

# --- Debian packages -------------------------------------------------------------------------------
macro(pt2diff_require package debian)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR "pt2diff: ${package} not found: apt-get install ${debian} (or run ./scripts/setup.sh)")
  endif()
endmacro()

pt2diff_require(fmt libfmt-dev)
pt2diff_require(nlohmann_json nlohmann-json3-dev)
pt2diff_require(CLI11 libcli11-dev)
pt2diff_require(Eigen3 libeigen3-dev)
pt2diff_require(Boost libboost-graph-dev)
include(CheckIncludeFileCXX)
set(CMAKE_REQUIRED_INCLUDES ${Boost_INCLUDE_DIRS})
check_include_file_cxx(boost/graph/adjacency_list.hpp PT2DIFF_HAVE_BOOST_GRAPH)
if(NOT PT2DIFF_HAVE_BOOST_GRAPH)
  message(FATAL_ERROR "pt2diff: Boost.Graph headers not found: apt-get install libboost-graph-dev")
endif()
if(PT2DIFF_BUILD_TESTS)
  pt2diff_require(GTest libgtest-dev)
endif()
if(PT2DIFF_BUILD_BENCH)
  pt2diff_require(benchmark libbenchmark-dev)
endif()
