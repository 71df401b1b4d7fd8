// SPDX-License-Identifier: Apache-2.0
// `-DCMAKE_BUILD_TYPE=Release` builds (label packaging): configures a separate build directory
// (build/release-check) in Release (-O3) with SEALRUN_WERROR=ON, the strictest form of what a
// packager does (every warning an error, except GCC 12's bogus -Wrestrict at -O3, which
// CMakeLists.txt keeps a warning), and builds the executable and the benchmark's tree generator,
// where that false positive first failed the build. Only those targets, and the libraries in
// unity batches (as .ci/setup and .ci/test build them), to keep the suite's budget: the executable
// compiles every library of the project, which file by file took 470 s of one core, the longest
// test of the suite. ccache, when installed, makes a re-run cheap.
#include <gtest/gtest.h>

#include <string>

#include "tests/packaging/shell.h"

namespace sealrun::testing {
namespace {

TEST(ReleaseBuild, CompilesWithWarningsAsErrors) {
  std::string dir = binary_dir() + "/release-check";
  auto c = shell(
      "launcher=\nif command -v ccache >/dev/null; then\n"
      "  launcher='-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache'\n"
      "  export CCACHE_BASEDIR=" +
          shell_quote(source_dir()) +
          "\nfi\n"
          "cmake -S " +
          shell_quote(source_dir()) + " -B " + shell_quote(dir) +
          " -DCMAKE_BUILD_TYPE=Release -DSEALRUN_WERROR=ON -DSEALRUN_TESTS=OFF -DSEALRUN_UNITY=ON"
          " -DSEALRUN_BENCH=ON $launcher >configure.log 2>&1 || { cat configure.log; exit 1; }\n"
          "cmake --build " +
          shell_quote(dir) +
          " -j2 --target sealrun gen_toolchain_tree 2>&1 |"
          " tail -n 60\n"
          "grep -q 'CMAKE_BUILD_TYPE:STRING=Release' " +
          shell_quote(dir) +
          "/CMakeCache.txt\n"
          "grep -q -- '-O3' " +
          shell_quote(dir) + "/CMakeCache.txt\n" + shell_quote(dir) + "/sealrun --version",
      binary_dir(), 1800000);
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("sealrun " SEALRUN_VERSION), std::string::npos) << c.out;
}

}  // namespace
}  // namespace sealrun::testing
