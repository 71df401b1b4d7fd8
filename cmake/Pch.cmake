# SPDX-License-Identifier: Apache-2.0
# Precompiled headers: the standard library, fmt and nlohmann/json are parsed once for the whole
# build instead of once per file (about 2/3 of a typical file's compile time was spent in them;
# bench/README.md, "Build CPU"). sealrun_core compiles the header; every other C++ target reuses
# it (REUSE_FROM), which GCC accepts because all targets share the same language flags, fmt's
# macro is defined in each, and the -D definitions some targets add are not used by those headers
# (-Winvalid-pch, an error here, says when a target cannot use it). The included headers are visible
# in every file, so a file that forgets an #include still builds here: clang-tidy and a
# -DSEALRUN_PCH=OFF build (the packaging test's) still catch it.
# Off by default: measured, it saves nothing here (bench/README.md, "Build CPU": GCC loads the
# whole header for every file, which costs light files more than it saves heavy ones, whose time
# goes to instantiating and optimizing templates, not to parsing).
option(SEALRUN_PCH "Precompile the standard library, fmt and nlohmann/json headers" OFF)

# ccache caches files built with a precompiled header only under this sloppiness (its manual,
# "Precompiled headers"); without it every such file would be compiled afresh each time.
if(SEALRUN_PCH AND CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  set(CMAKE_CXX_COMPILER_LAUNCHER env CCACHE_SLOPPINESS=pch_defines,time_macros
      ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()

# GCC 12 orders inlining by where functions are declared, and with the header first it reports
# -Warray-bounds false positives inside libstdc++'s inlined std::string moves (the same family as
# GCC bug 105329, fixed in GCC 13; e.g. containment/resgroup/group_spawn.cc). With the header they
# stay warnings: the compiler's bug must not fail the build.
if(SEALRUN_PCH AND SEALRUN_WERROR AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  add_compile_options(-Wno-error=array-bounds)
endif()

set(SEALRUN_PCH_HEADERS
  <algorithm> <array> <atomic> <charconv> <cstdint> <cstring> <filesystem> <functional> <map>
  <memory> <mutex> <optional> <set> <string> <string_view> <thread> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# sealrun_pch_reuse(DIR...): every C++ target defined in DIR (and below) reuses sealrun_core's
# precompiled header. Targets with C sources are left alone (the header is C++).
function(sealrun_pch_reuse)
  if(NOT SEALRUN_PCH)
    return()
  endif()
  foreach(dir ${ARGN})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$" OR t STREQUAL sealrun_core)
        continue()
      endif()
      get_target_property(sources ${t} SOURCES)
      get_target_property(flags ${t} COMPILE_OPTIONS)
      if(NOT sources MATCHES "\\.cc" OR sources MATCHES "\\.c;|\\.c$" OR flags MATCHES "^-w$|;-w;|;-w$")
        continue()
      endif()
      target_precompile_headers(${t} REUSE_FROM sealrun_core)
      # GCC uses the header only where the macros it was made with are defined alike: fmt's
      # (FMT_SHARED), also in targets that do not link fmt.
      target_compile_definitions(${t} PRIVATE
        $<TARGET_PROPERTY:fmt::fmt,INTERFACE_COMPILE_DEFINITIONS>)
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    if(subdirs)
      sealrun_pch_reuse(${subdirs})
    endif()
  endforeach()
endfunction()
