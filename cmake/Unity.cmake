# SPDX-License-Identifier: Apache-2.0
# Unity builds of sealrun's own libraries: CMake compiles each library's sources in batches, one
# translation unit per batch (Unity/unity_N_cxx.cxx includes the batch's .cc files), so the
# standard library, fmt, nlohmann/json and CLI11 are parsed, instantiated and optimised once per
# batch instead of once per file. Measured, it is the largest single cut of the build's CPU
# (bench/README.md, "Build CPU"). The files of one library then share one translation unit, so
# helpers in anonymous namespaces must not repeat a name within a library (a unity build fails
# on such a repeat; rename the helper).
# On in `.ci/setup`'s one-time build; off by default and in `.ci/test`: a unity build recompiles a
# whole batch for a one-file edit, and clang-tidy (.ci/tidy) needs one compile command per file.
option(SEALRUN_UNITY "Compile sealrun's libraries as unity builds (batches of files)" OFF)
# 0 puts a whole library in one batch: the check that no two files of a library clash.
set(SEALRUN_UNITY_BATCH 16 CACHE STRING "Files per unity batch (SEALRUN_UNITY; 0: one per library)")

# sealrun_unity(DIR...): every library and executable defined in DIR (and below) is built as a
# unity build when SEALRUN_UNITY is on. Generated sources (protoc's) stay out of the batches.
function(sealrun_unity)
  if(NOT SEALRUN_UNITY)
    return()
  endif()
  foreach(dir ${ARGN})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE|OBJECT_LIBRARY)$")
        continue()
      endif()
      get_target_property(sources ${t} SOURCES)
      foreach(s ${sources})
        # GENERATED is looked up in the target's directory (where protoc's command made the file).
        get_source_file_property(generated ${s} TARGET_DIRECTORY ${t} GENERATED)
        cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${s}" NORMALIZE in_binary_dir)
        if(generated OR in_binary_dir)
          set_source_files_properties(${s} TARGET_DIRECTORY ${t} PROPERTIES
                                      SKIP_UNITY_BUILD_INCLUSION ON)
        endif()
      endforeach()
      set_target_properties(${t} PROPERTIES UNITY_BUILD ON
                            UNITY_BUILD_BATCH_SIZE ${SEALRUN_UNITY_BATCH})
      # GCC warns when a class defined outside the main file has a member of an anonymous-namespace
      # type (-Wsubobject-linkage: a header's class would differ between files). In a batch every
      # .cc is an included file, so the warning fires on classes that are file-local in truth;
      # the file-by-file build (CI's) keeps it.
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_compile_options(${t} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
      endif()
    endforeach()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    if(subdirs)
      sealrun_unity(${subdirs})
    endif()
  endforeach()
endfunction()
