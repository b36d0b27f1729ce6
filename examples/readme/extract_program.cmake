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

set(marker "<!-- readme-example -->")
file(READ ${README} readme)
string(FIND "${readme}" "${marker}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no line '${marker}' before the short program")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "\n```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block after '${marker}'")
endif()
math(EXPR begin "${at} + ${begin} + 8") # past "\n```cpp\n", counted in the whole README
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the ```cpp block after '${marker}' is not closed")
endif()
math(EXPR end "${end} + 1") # keep the program's last newline
string(SUBSTRING "${rest}" 0 ${end} program)

string(SUBSTRING "${readme}" 0 ${begin} before)
string(REGEX MATCHALL "\n" newlines "${before}")
list(LENGTH newlines line)
math(EXPR line "${line} + 1") # the program's first line, numbered from 1
file(WRITE ${OUT} "#line ${line} \"${README}\"\n${program}")
