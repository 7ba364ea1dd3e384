# ccache, when installed, with the settings that let it cache GCC precompiled headers.
find_program(PT2DIFF_CCACHE ccache)
if(PT2DIFF_CCACHE)
  # base_dir + no hash_dir: paths inside the clone are hashed relative to it, so a fresh clone
  # elsewhere (CI) hits the cache that earlier clones filled.
  # The fuzz project (tests/fuzz) compiles sources of the repository root: its base is PT2DIFF_ROOT.
  if(DEFINED PT2DIFF_ROOT)
    set(_ccache_base ${PT2DIFF_ROOT})
  else()
    set(_ccache_base ${CMAKE_SOURCE_DIR})
  endif()
  set(_ccache_env CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
                  CCACHE_BASEDIR=${_ccache_base} CCACHE_NOHASHDIR=1)
  if(DEFINED ENV{CCACHE_DIR})
    list(APPEND _ccache_env CCACHE_DIR=$ENV{CCACHE_DIR})
  endif()
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env ${_ccache_env} ${PT2DIFF_CCACHE})
  message(STATUS "pt2diff: compiling through ${PT2DIFF_CCACHE}")
else()
  message(STATUS "pt2diff: ccache not found; rebuilds will be slower (apt-get install ccache)")
endif()
