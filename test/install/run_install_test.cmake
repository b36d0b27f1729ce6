# Installs the built tree into a private prefix, then configures, builds and runs a consumer that
# finds corolock with find_package: proves the exported targets, the package config and the
# installed headers are complete, as a downstream project sees them.
#
# Run as: cmake -DBUILD_DIR=<built tree> -DCONSUMER_DIR=<consumer source> -DWORK_DIR=<scratch dir>
#               [-DBUILD_TYPE=..] [-DGENERATOR=..] [-DCXX=..] [-DLAUNCHER=..] [-DSANITIZE=..]
#               -P run_install_test.cmake
foreach(var BUILD_DIR CONSUMER_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run_install_test.cmake: ${var} is not set")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})  # a stale prefix could hide a file that is no longer installed

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

set(configure_args -S ${CONSUMER_DIR} -B ${consumer_build} -DCMAKE_PREFIX_PATH=${prefix})
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
if(BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
if(CXX)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX})
endif()
if(LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(SANITIZE)
  # A sanitized static library needs the sanitizer runtime in whatever links it.
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
                             "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
run("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})
run("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build})

find_program(consumer_exe consumer PATHS ${consumer_build} ${consumer_build}/${BUILD_TYPE} NO_DEFAULT_PATH
             NO_CACHE REQUIRED)
run("running the consumer" ${consumer_exe})
if(NOT last_output MATCHES "category=corolock\ntimeout=[^\n]+\ntls=1" OR last_output MATCHES "unknown")
  message(FATAL_ERROR "install test: unexpected consumer output:\n${last_output}")
endif()

# The same consumer built without CMake, from the installed pkg-config file alone.
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
find_file(pc_file corolock.pc PATHS ${prefix} PATH_SUFFIXES lib/pkgconfig lib64/pkgconfig
          NO_DEFAULT_PATH NO_CACHE REQUIRED)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
run("pkg-config" ${pkg_config} --cflags --libs corolock)
string(STRIP "${last_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
if(NOT CXX)
  set(CXX c++)
endif()
set(pc_exe ${WORK_DIR}/consumer_pkg_config)
set(sanitize_flags)
if(SANITIZE)
  set(sanitize_flags -fsanitize=${SANITIZE})
endif()
run("building the consumer with pkg-config" ${CXX} -std=c++20 ${sanitize_flags}
    ${CONSUMER_DIR}/main.cpp -o ${pc_exe} ${pc_flags})
run("running the pkg-config consumer" ${pc_exe})
if(NOT last_output MATCHES "category=corolock\ntimeout=[^\n]+\ntls=1")
  message(FATAL_ERROR "install test: unexpected pkg-config consumer output:\n${last_output}")
endif()
message(STATUS "install test passed (find_package and pkg-config):\n${last_output}")
file(REMOVE_RECURSE ${WORK_DIR})
