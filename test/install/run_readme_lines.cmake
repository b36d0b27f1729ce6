# The README's install lines, run as a user types them, then the examples a user copies built on
# their own against what those lines installed. The install test (run_install_test.cmake) installs
# the developer build; this one proves the path the README promises: a plain configure of a copy of
# the sources (no COROLOCK_DEVELOPER, so a Release library alone), build, install; then
# examples/quickstart and examples/threads configured from their own folders with
# find_package(corolock), as their CMakeLists say.
#
# Only the install prefix is replaced (/opt/corolock -> WORK_DIR/prefix), so CI writes nothing
# outside its build tree; every other word of the README's block runs unchanged, in the order given.
#
# Run as: cmake -DREADME=<README.md> -DSOURCE_ROOT=<checkout> -DWORK_DIR=<scratch dir>
#               -P run_readme_lines.cmake
foreach(var README SOURCE_ROOT WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run_readme_lines.cmake: ${var} is not set")
  endif()
endforeach()

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readme install lines: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

# The block: the first ```sh fence after the line that introduces building and installing.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/readme_block.cmake)
readme_block(${README} "Build and install" sh lines first_line)
string(FIND "${lines}" "/opt/corolock" prefix_at)
if(prefix_at EQUAL -1)
  message(FATAL_ERROR "readme install lines: the block names no /opt/corolock prefix:\n${lines}")
endif()

set(prefix ${WORK_DIR}/prefix)
set(src ${WORK_DIR}/corolock)
file(REMOVE_RECURSE ${WORK_DIR})
# What a user's plain configure reads: the top-level list, cmake/, include/, src/ (a stray piece
# it needs from elsewhere fails the configure here, as it would for the user).
file(MAKE_DIRECTORY ${src})
foreach(part CMakeLists.txt cmake include src)
  file(COPY ${SOURCE_ROOT}/${part} DESTINATION ${src})
endforeach()

# ccache (which the library's CMake picks up by itself) hits across runs only when the copy's paths
# are relative to it, and the copy's files are new each time: the same settings as scripts/build.sh.
set(ENV{CCACHE_BASEDIR} ${src})
set(ENV{CCACHE_SLOPPINESS} pch_defines,time_macros,include_file_mtime,include_file_ctime)

string(REPLACE "/opt/corolock" "${prefix}" lines "${lines}")
string(REGEX MATCHALL "[^\n]+" commands "${lines}")
foreach(command IN LISTS commands)
  message(STATUS "readme: ${command}")
  run("'${command}'" bash -euc "${command}" WORKING_DIRECTORY ${src})
endforeach()

# The installed library is the Release one the README promises, not the developer's.
file(GLOB_RECURSE config_file ${prefix}/corolockConfig.cmake)
if(NOT config_file)
  message(FATAL_ERROR "readme install lines: nothing installed a corolockConfig.cmake in ${prefix}")
endif()
file(GLOB_RECURSE configured ${WORK_DIR}/corolock/build/CMakeCache.txt)
file(STRINGS ${configured} build_type REGEX "^CMAKE_BUILD_TYPE:")
if(NOT build_type MATCHES "=Release$")
  message(FATAL_ERROR "readme install lines: a plain configure chose '${build_type}', not Release")
endif()

foreach(example quickstart threads)
  run("configuring examples/${example} on its own"
      ${CMAKE_COMMAND} -S ${SOURCE_ROOT}/examples/${example} -B ${WORK_DIR}/${example}
      -DCMAKE_PREFIX_PATH=${prefix})
  run("building examples/${example} on its own" ${CMAKE_COMMAND} --build ${WORK_DIR}/${example})
  if(NOT EXISTS ${WORK_DIR}/${example}/${example})
    message(FATAL_ERROR "readme install lines: examples/${example} built no executable")
  endif()
endforeach()
message(STATUS "readme install lines: ran ${commands}; installed ${prefix} (${build_type}); "
               "examples/quickstart and examples/threads built on their own against it")
