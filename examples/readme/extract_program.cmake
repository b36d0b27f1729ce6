# Writes the first ```cpp block after the line "<!-- readme-example -->" of README to OUT, headed
# by a #line so that a compiler error points at the README's own line; fails, naming what it
# looked for, when the marker or the block is missing (a README that lost its program must not
# build quietly without it).
#
# Run as: cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_program.cmake
foreach(var README OUT)
  if(NOT ${var})
    message(FATAL_ERROR "extract_program.cmake: ${var} is not set")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/readme_block.cmake)
readme_block(${README} "<!-- readme-example -->" cpp program line)
file(WRITE ${OUT} "#line ${line} \"${README}\"\n${program}")
