# What the linked torch can represent, found by scanning its headers (not by version number: a
# nightly or a patched build is judged by what it has). Every difference between the torch versions
# pt2diff builds against (2.11 to 2.14) is one entry here and one line in engine/load/torch_compat.h.in,
# with the version that introduced it. Writes ${CMAKE_BINARY_DIR}/generated/engine/load/torch_compat.h.

set(_schema_header "")
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/torch/csrc/utils/generated_serialization_types.h")
    set(_schema_header "${_dir}/torch/csrc/utils/generated_serialization_types.h")
    break()
  endif()
endforeach()
file(READ "${_schema_header}" _schema)
if(NOT PT2DIFF_TORCH_VERSION)
  set(PT2DIFF_TORCH_VERSION "${Torch_VERSION}")
endif()

# Argument.as_float_lists (an op argument that is a list of float lists): added in torch 2.12's export
# schema (8.20); 2.11's (8.17) does not have it.
string(FIND "${_schema}" "AS_FLOAT_LISTS" _at)
if(_at EQUAL -1)
  set(PT2DIFF_SCHEMA_HAS_FLOAT_LISTS 0)
else()
  set(PT2DIFF_SCHEMA_HAS_FLOAT_LISTS 1)
endif()

# at::accelerator::getMemoryInfo / getDeviceStats / resetPeakStats (ATen/DeviceAccelerator.h): the
# GPU's free memory and the caching allocator's peak without CUDA headers. In torch 2.9 and later.
set(PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY 0)
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/ATen/DeviceAccelerator.h")
    file(READ "${_dir}/ATen/DeviceAccelerator.h" _accelerator)
    string(FIND "${_accelerator}" "getMemoryInfo" _at_info)
    string(FIND "${_accelerator}" "getDeviceStats" _at_stats)
    if(NOT _at_info EQUAL -1 AND NOT _at_stats EQUAL -1)
      set(PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY 1)
    endif()
    break()
  endif()
endforeach()

configure_file("${CMAKE_CURRENT_SOURCE_DIR}/engine/load/torch_compat.h.in" "${CMAKE_BINARY_DIR}/generated/engine/load/torch_compat.h" @ONLY)
message(STATUS "pt2diff: torch ${PT2DIFF_TORCH_VERSION} export schema: as_float_lists ${PT2DIFF_SCHEMA_HAS_FLOAT_LISTS}; "
               "accelerator memory API ${PT2DIFF_TORCH_HAS_ACCELERATOR_MEMORY}")
