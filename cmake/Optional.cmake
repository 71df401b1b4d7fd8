# SPDX-License-Identifier: Apache-2.0
# Parts of the build that need a package the product itself does not (the tests' GoogleTest, the
# benchmarks' Google Benchmark): an option with three values, so a newcomer's set-up configures
# without the test suite's packages and CI still fails loudly when one is missing.
#   ON    the package is required (configure fails without it)
#   OFF   the part is left out
#   AUTO  built where the package is found, else left out with a message naming the packages

# sealrun_optional(OPTION PACKAGE DEBIAN_NAMES): find_package(PACKAGE) as OPTION says; sets
# OPTION_ENABLED in the caller's scope.
function(sealrun_optional option package debian)
  string(TOUPPER "${${option}}" value)
  set(enabled OFF)
  if(value STREQUAL "ON" OR value STREQUAL "TRUE" OR value STREQUAL "1" OR value STREQUAL "YES")
    find_package(${package} REQUIRED)
    set(enabled ON)
  elseif(value STREQUAL "AUTO")
    find_package(${package} QUIET)
    if(${package}_FOUND)
      set(enabled ON)
    else()
      message(STATUS "${option}: ${debian} not found, so this part is not built "
                     "(install it, or `bash .ci/test` does, and configure again)")
    endif()
  elseif(NOT (value STREQUAL "OFF" OR value STREQUAL "FALSE" OR value STREQUAL "0"
              OR value STREQUAL "NO"))
    message(FATAL_ERROR "${option} is '${${option}}': use ON, OFF or AUTO")
  endif()
  set(${option}_ENABLED ${enabled} PARENT_SCOPE)
endfunction()
