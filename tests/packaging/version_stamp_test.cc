// SPDX-License-Identifier: Apache-2.0
// `sealrun --version` and the build-time commit stamp (label packaging): the built executable
// names the commit of its source tree; and, in a scratch CMake project that uses the real
// core/CMakeLists.txt and cmake/GenerateVersion.cmake, a rebuild after an edit says "dirty", a
// rebuild after a commit names the new commit, an unchanged tree recompiles nothing, and a tree
// without .git (a tarball) says "unknown" unless the packager names the commit.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/packaging/shell.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The commit the source tree is at, or "unknown" when it is not the top of a git work tree.
std::string source_commit() {
  auto c = shell("top=$(git -C " + shell_quote(source_dir()) +
                 " rev-parse --show-toplevel 2>/dev/null) || { echo unknown; exit 0; }\n"
                 "if [ \"$(realpath \"$top\")\" = \"$(realpath " +
                 shell_quote(source_dir()) +
                 ")\" ]; then git -C \"$top\" rev-parse HEAD; else echo unknown; fi");
  return first_line(c.out);
}

TEST(Version, NamesTheVersionAndTheCommitOfTheSourceTree) {
  auto c = shell(shell_quote(sealrun_path()) + " --version");
  ASSERT_EQ(c.status.code, 0) << c.err;
  std::string want = "sealrun " SEALRUN_VERSION " (commit " + source_commit();
  EXPECT_EQ(c.out.rfind(want, 0), 0u) << "got: " << c.out << "want prefix: " << want;
  EXPECT_TRUE(first_line(c.out) == want + ")" || first_line(c.out) == want + ", dirty)") << c.out;
}

class VersionStamp : public ::testing::Test {
 protected:
  void SetUp() override {
    proj_ = dir_ / "proj";
    // The real core/ (added as a sub-directory from the source tree) and the real generator,
    // copied to where core/CMakeLists.txt looks for it in the project it is part of.
    std::string cmake = R"(cmake_minimum_required(VERSION 3.25)
project(stamp VERSION 9.8.7 LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_EXTENSIONS ON)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json REQUIRED)
include_directories()" + source_dir() +
                        R"()
add_subdirectory()" + source_dir() +
                        R"(/core core)
add_executable(show_version main.cc)
target_link_libraries(show_version sealrun_version)
)";
    auto c = shell("mkdir -p proj/cmake && cp " + shell_quote(source_dir()) +
                       "/cmake/GenerateVersion.cmake proj/cmake/\n"
                       "cat > proj/CMakeLists.txt <<'EOF'\n" +
                       cmake + "EOF\n" +
                       "cat > proj/main.cc <<'EOF'\n"
                       "#include <cstdio>\n#include \"core/version.h\"\n"
                       "int main() { std::puts(sealrun::version_text(sealrun::sealrun_version())"
                       ".c_str()); }\nEOF\n"
                       "cd proj && git init -q && git add -A && "
                       "git -c user.name=t -c user.email=t@t commit -qm one",
                   dir_.str());
    ASSERT_EQ(c.status.code, 0) << c.err;
  }
  // Configures (once per build dir) and builds, then runs the program: its version text.
  std::string build_and_run(const std::string& src, const std::string& build,
                            const std::string& configure_args = "") {
    auto c = shell("[ -e " + build + "/CMakeCache.txt ] || cmake -S " + src + " -B " + build + " " +
                       configure_args +
                       " >/dev/null\n"
                       "cmake --build " +
                       build + " --target show_version >/dev/null\n" + build + "/show_version",
                   dir_.str());
    EXPECT_EQ(c.status.code, 0) << c.err << c.out;
    return first_line(c.out);
  }
  std::string head(const std::string& repo) {
    return first_line(shell("git -C " + repo + " rev-parse HEAD").out);
  }
  TempDir dir_;
  std::string proj_;
};

TEST_F(VersionStamp, ARebuildAfterAnEditOrACommitReportsIt) {
  std::string one = head(proj_);
  EXPECT_EQ(build_and_run("proj", "b"), "9.8.7 (commit " + one + ")");

  // Nothing changed: the generated source is not rewritten, so nothing is recompiled.
  struct stat before {};
  ASSERT_EQ(::stat((dir_ / "b/core/version_generated.cc").c_str(), &before), 0);
  EXPECT_EQ(build_and_run("proj", "b"), "9.8.7 (commit " + one + ")");
  struct stat after {};
  ASSERT_EQ(::stat((dir_ / "b/core/version_generated.cc").c_str(), &after), 0);
  EXPECT_EQ(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);

  // An untracked file is not an edit; a changed tracked file is.
  ASSERT_EQ(shell("touch proj/untracked.txt", dir_.str()).status.code, 0);
  EXPECT_EQ(build_and_run("proj", "b"), "9.8.7 (commit " + one + ")");
  ASSERT_EQ(shell("echo '// edited' >> proj/main.cc", dir_.str()).status.code, 0);
  EXPECT_EQ(build_and_run("proj", "b"), "9.8.7 (commit " + one + ", dirty)");

  // A commit, then a plain rebuild (no re-configure): the new commit, clean.
  ASSERT_EQ(shell("cd proj && git -c user.name=t -c user.email=t@t commit -qam two", dir_.str())
                .status.code,
            0);
  std::string two = head(proj_);
  ASSERT_NE(one, two);
  EXPECT_EQ(build_and_run("proj", "b"), "9.8.7 (commit " + two + ")");
}

TEST_F(VersionStamp, ATreeWithoutGitSaysUnknownUnlessThePackagerNamesTheCommit) {
  // A tarball of the project unpacked inside another repository: that repository's commit is
  // not the project's.
  ASSERT_EQ(shell("mkdir outer && cd outer && git init -q && "
                  "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m outer && "
                  "mkdir tarball && cp -r ../proj/. tarball/ && rm -rf tarball/.git",
                  dir_.str())
                .status.code,
            0);
  EXPECT_EQ(build_and_run("outer/tarball", "t"), "9.8.7 (commit unknown)");
  EXPECT_EQ(build_and_run("outer/tarball", "t2", "-DSEALRUN_GIT_COMMIT=0123abcd"),
            "9.8.7 (commit 0123abcd)");
  // A malformed commit is refused at build time, naming it.
  auto c = shell(
      "cmake -S outer/tarball -B t3 -DSEALRUN_GIT_COMMIT=not-hex >/dev/null && "
      "cmake --build t3 --target show_version 2>&1",
      dir_.str());
  EXPECT_NE(c.status.code, 0);
  EXPECT_NE(c.out.find("is not hexadecimal"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace sealrun::testing
