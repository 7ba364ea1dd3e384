# The Python module pt2diff._pt2diff (engine/python/module.cpp): built against the torch of PT2DIFF_PYTHON,
# with the pybind11 that torch ships in its include dir (torch's own ABI) and libtorch_python (the tensor
# bridge THPVariable_*). Optional: without Python's headers the rest builds and configure says so.
#
# The module lands in BUILD/python/pt2diff/ next to links to python/pt2diff/*.py, so
# PYTHONPATH=BUILD/python imports the package from a build tree (the tests do); scripts/setup.sh copies it
# into the venv's installed package.
set(Python_EXECUTABLE "${PT2DIFF_PYTHON}")
find_package(Python 3.10 COMPONENTS Interpreter Development.Module QUIET)
find_library(PT2DIFF_TORCH_PYTHON_LIBRARY torch_python PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
if(NOT Python_Development.Module_FOUND)
  message(STATUS "pt2diff: no Python headers for ${PT2DIFF_PYTHON}: the Python module pt2diff._pt2diff is not built "
                 "(apt-get install python3-dev, then configure again)")
  return()
endif()
if(NOT PT2DIFF_TORCH_PYTHON_LIBRARY OR NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/pybind11/pybind11.h")
  message(STATUS "pt2diff: the torch install lacks libtorch_python or its pybind11 headers: the Python module is not built")
  return()
endif()
message(STATUS "pt2diff: the Python module pt2diff._pt2diff for Python ${Python_VERSION} (${Python_EXECUTABLE})")

Python_add_library(pt2diff_python MODULE WITH_SOABI engine/python/module.cpp)
set_target_properties(pt2diff_python PROPERTIES OUTPUT_NAME _pt2diff LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/python/pt2diff"
                                                 CXX_VISIBILITY_PRESET hidden)
target_link_libraries(pt2diff_python PRIVATE pt2diff "${PT2DIFF_TORCH_PYTHON_LIBRARY}" fmt::fmt-header-only)
# The engine's own symbols stay inside the module: only PyInit__pt2diff is exported.
target_link_options(pt2diff_python PRIVATE -Wl,--exclude-libs,ALL)

file(GLOB _pt2diff_package_files CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/python/pt2diff/*.py")
file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/python/pt2diff")
foreach(_file ${_pt2diff_package_files})
  get_filename_component(_name "${_file}" NAME)
  file(CREATE_LINK "${_file}" "${CMAKE_BINARY_DIR}/python/pt2diff/${_name}" SYMBOLIC)
endforeach()
