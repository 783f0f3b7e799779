# gmi_refusal_test(<test name> <output regex> <command> [args...])
# A CPU test of bad input: passes when <command> exits 2 and its output (stdout and stderr) matches the regex
# (through cmake/expect_exit.cmake). Every gmi binary and bench script refuses bad arguments that way: one line
# naming the value and what is allowed, exit 2, before any device work.
function(gmi_refusal_test name expect)
  add_test(NAME ${name}
           COMMAND "${CMAKE_COMMAND}" -DEXPECT_EXIT=2 "-DEXPECT_OUTPUT=${expect}"
                   -P "${PROJECT_SOURCE_DIR}/cmake/expect_exit.cmake" ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS cpu)
endfunction()
