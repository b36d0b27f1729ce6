# readme_block(<file> <after> <lang> <body_var> <line_var>): the first ```<lang> fence that follows
# the first occurrence of the text <after> in <file>. Sets <body_var> to the block's lines (with
# the last newline, without the fences) and <line_var> to the file's line number of the first of
# them. Stops the script with a message naming what it looked for when the text, the block or its
# closing fence is missing: a README that lost a block the build runs must not pass without it.
#
# Shared by the scripts (cmake -P) that run what the README shows: examples/readme (the short
# program) and test/install/run_readme_lines.cmake (the install lines).
function(readme_block file after lang body_var line_var)
  file(READ ${file} text)
  string(FIND "${text}" "${after}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${file}: no '${after}'")
  endif()
  string(SUBSTRING "${text}" ${at} -1 rest)
  string(FIND "${rest}" "\n```${lang}\n" open)
  if(open EQUAL -1)
    message(FATAL_ERROR "${file}: no ```${lang} block after '${after}'")
  endif()
  string(LENGTH "\n```${lang}\n" fence)
  math(EXPR begin "${at} + ${open} + ${fence}") # the block's first character, in the whole file
  string(SUBSTRING "${text}" ${begin} -1 rest)
  string(FIND "${rest}" "\n```" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "${file}: the ```${lang} block after '${after}' is not closed")
  endif()
  math(EXPR end "${end} + 1") # keep the block's last newline
  string(SUBSTRING "${rest}" 0 ${end} body)

  string(SUBSTRING "${text}" 0 ${begin} before)
  string(REGEX MATCHALL "\n" newlines "${before}")
  list(LENGTH newlines line)
  math(EXPR line "${line} + 1") # numbered from 1
  set(${body_var} "${body}" PARENT_SCOPE)
  set(${line_var} ${line} PARENT_SCOPE)
endfunction()
