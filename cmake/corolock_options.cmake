# Compiler settings shared by every corolock target.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# ccache makes rebuilds of the Asio-heavy sources nearly free, in this build tree and in any other
# checkout (scripts/build.sh sets its base directory to the checkout).
find_program(COROLOCK_CCACHE ccache)
if(COROLOCK_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${COROLOCK_CCACHE})
endif()
# Precompiled headers and ccache do not mix across build trees: GCC's .gch is not reproducible (two
# builds of one header differ byte for byte) and ccache hashes it into every source that includes
# it, so with both a fresh clone missed the cache on every source (CI rebuilt everything cold). With
# ccache the build goes without precompiled headers, and ccache serves every tree; without it, the
# precompiled headers shorten the cold build.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
  set(corolock_pch_default OFF)
else()
  set(corolock_pch_default ON)
endif()
option(COROLOCK_PCH "Compile with precompiled headers" ${corolock_pch_default})
if(NOT COROLOCK_PCH)
  set(CMAKE_DISABLE_PRECOMPILE_HEADERS ON)
endif()

add_library(corolock_warnings INTERFACE)
# Our own sources stay clear of Asio's deprecated names; this is not forced on consumers (their
# `io_context::work` or `io.post()` keeps compiling when they link corolock).
target_compile_definitions(corolock_warnings INTERFACE BOOST_ASIO_NO_DEPRECATED)
target_compile_options(corolock_warnings INTERFACE -Wall -Wextra -Wpedantic
  # GCC 12 misreports the sized operator delete of Asio coroutine frames (awaitable_frame_base).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)

set(COROLOCK_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")

# The debug check that a client and its locks are called from the client's executor
# (src/detail/executor_check.hpp): a call from another thread while one runs the io_context aborts
# with words. AUTO: on in Debug builds (CI's sanitized build is one), off otherwise; ON or OFF
# forces it. It costs a lock and a lookup per call and per completion, so not in release builds.
set(COROLOCK_CHECK_EXECUTOR AUTO CACHE STRING
    "Abort on a call made off the client's executor: AUTO (Debug builds), ON or OFF")
set_property(CACHE COROLOCK_CHECK_EXECUTOR PROPERTY STRINGS AUTO ON OFF)
if(COROLOCK_SANITIZE)
  add_compile_options(-fsanitize=${COROLOCK_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${COROLOCK_SANITIZE})
endif()
