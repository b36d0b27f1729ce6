# Compiler settings shared by every corolock target.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# ccache makes rebuilds of the Asio-heavy sources nearly free.
find_program(COROLOCK_CCACHE ccache)
if(COROLOCK_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${COROLOCK_CCACHE})
endif()

add_library(corolock_warnings INTERFACE)
# Our own sources stay clear of Asio's deprecated names; this is not forced on consumers (their
# `io_context::work` or `io.post()` keeps compiling when they link corolock).
target_compile_definitions(corolock_warnings INTERFACE BOOST_ASIO_NO_DEPRECATED)
target_compile_options(corolock_warnings INTERFACE -Wall -Wextra -Wpedantic
  # GCC 12 misreports the sized operator delete of Asio coroutine frames (awaitable_frame_base).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)

set(COROLOCK_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")
if(COROLOCK_SANITIZE)
  add_compile_options(-fsanitize=${COROLOCK_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${COROLOCK_SANITIZE})
endif()
