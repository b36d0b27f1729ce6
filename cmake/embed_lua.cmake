# Turns src/backends/redis/lua/*.lua into a C++ source with one string constant per script, at
# build time, so the scripts stay real files (readable, testable with redis-cli) yet ship inside
# the library.
# Run as: cmake -DOUTPUT=<file.cpp> -DINPUTS=<a.lua|b.lua> -P embed_lua.cmake
string(REPLACE "|" ";" INPUTS "${INPUTS}")
set(out "// Generated from src/backends/redis/lua/*.lua by cmake/embed_lua.cmake. Do not edit.\n")
string(APPEND out "#include <string_view>\n\nnamespace corolock::redis::detail::lua {\n\n")
foreach(input IN LISTS INPUTS)
  get_filename_component(name "${input}" NAME_WE)
  file(READ "${input}" body)
  string(APPEND out "extern const std::string_view ${name};\n")
  string(APPEND out "const std::string_view ${name} = R\"corolock_lua(${body})corolock_lua\";\n\n")
endforeach()
string(APPEND out "} // namespace corolock::redis::detail::lua\n")
file(WRITE "${OUTPUT}.tmp" "${out}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
