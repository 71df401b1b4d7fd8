// SPDX-License-Identifier: Apache-2.0
// The demo without root (controller/cli/demo_unprivileged.h): which directories it pins (nested
// ones once, the compiler's include list read from `gcc -E -v`, the real compiler's parts on this
// host), and the one line that names the containment an ordinary user lacks.
#include "controller/cli/demo_unprivileged.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/process.h"

namespace sealrun::cli {
namespace {

namespace fs = std::filesystem;

TEST(DemoUnprivileged, OutermostDirsKeepEachOnce) {
  struct Case {
    std::vector<std::string> in;
    std::vector<std::string> out;
  };
  const Case cases[] = {
      {{}, {}},
      {{"/usr/bin", "/usr/bin"}, {"/usr/bin"}},
      {{"/usr/include/x86_64-linux-gnu", "/usr/include", "/usr/bin"}, {"/usr/bin", "/usr/include"}},
      // A sibling whose name extends another's is not inside it.
      {{"/usr/lib/x", "/usr/lib-x", "/usr/lib"}, {"/usr/lib", "/usr/lib-x"}},
      {{"/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/lib/gcc/x86_64-linux-gnu/12",
        "/usr/lib/x86_64-linux-gnu", "/usr/lib64"},
       {"/usr/lib/gcc/x86_64-linux-gnu/12", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"}},
      {{"", "/a"}, {"/a"}},
  };
  for (const Case& c : cases) EXPECT_EQ(outermost_dirs(c.in), c.out);
}

TEST(DemoUnprivileged, IncludeDirsFromVerboseOutput) {
  const std::string gcc12 =
      "ignoring nonexistent directory \"/usr/local/include/x86_64-linux-gnu\"\n"
      "#include \"...\" search starts here:\n"
      "#include <...> search starts here:\n"
      " /usr/lib/gcc/x86_64-linux-gnu/12/include\n"
      " /usr/local/include\n"
      " /usr/include/x86_64-linux-gnu\n"
      " /usr/include\n"
      "End of search list.\n"
      "COMPILER_PATH=/usr/lib/gcc/x86_64-linux-gnu/12/\n";
  EXPECT_EQ(
      include_dirs_from(gcc12),
      (std::vector<std::string>{"/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/local/include",
                                "/usr/include/x86_64-linux-gnu", "/usr/include"}));
  EXPECT_TRUE(include_dirs_from("no list here\n").empty());
  EXPECT_EQ(include_dirs_from("#include <...> search starts here:\n /opt/inc (framework "
                              "directory)\nEnd of search list.\n"),
            std::vector<std::string>{"/opt/inc"});
}

TEST(DemoUnprivileged, MissingDimensionsOfTheBestCandidate) {
  const DimensionSet all = DimensionSet::all();
  DimensionSet bwrap = all - DimensionSet{Dimension::kMemory, Dimension::kProcessCount};
  DimensionSet podman = bwrap - DimensionSet{Dimension::kSyscalls};
  // None available: nothing to say here (the run names each mechanism and why).
  EXPECT_FALSE(missing_dimensions({}, all));
  // One enforces everything: no gap, whatever the others lack.
  EXPECT_FALSE(missing_dimensions({{"podman", podman}, {"bwrap", all}}, all));
  // Otherwise the fewest missing.
  auto gap = missing_dimensions({{"podman", podman}, {"bwrap", bwrap}}, all);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->joined(), "memory, process_count");
  // Only what is required counts.
  EXPECT_FALSE(missing_dimensions({{"bwrap", bwrap}},
                                  DimensionSet{Dimension::kFilesystem, Dimension::kNetwork}));
}

TEST(DemoUnprivileged, OneLineSaysWhatIsMissingAndWhatToDo) {
  EXPECT_EQ(
      missing_containment_line(DimensionSet{Dimension::kMemory, Dimension::kProcessCount}, "alice"),
      "memory, process_count are not enforceable as alice here (a resource group needs "
      "root, or a cgroup delegated to alice): run as root, or under a systemd user manager "
      "with a delegated cgroup (cgroup v2), or pass --mode report-only to build with the "
      "shortfall recorded");
  EXPECT_EQ(missing_containment_line(DimensionSet{Dimension::kSyscalls}, "bob"),
            "syscalls is not enforceable as bob here: run as root, or pass --mode report-only to "
            "build with the shortfall recorded");
  EXPECT_EQ(missing_containment_line(DimensionSet{Dimension::kMemory}, "bob").find('\n'),
            std::string::npos);
}

// The real compiler of this host: its cc1 is in the toolchain, its driver's directory and its C
// library's are trees, and no two overlap (the parser would refuse that).
TEST(DemoUnprivileged, CompilerTreesHoldTheCompilersParts) {
  auto gcc = find_program("gcc");
  ASSERT_TRUE(gcc.ok()) << "gcc is part of the build's packages";
  auto trees = compiler_trees(*gcc, "/bin/sh");
  ASSERT_TRUE(trees.ok()) << trees.error().message();
  auto inside = [](const std::string& p, const std::string& d) {
    return p == d || p.rfind(d + "/", 0) == 0;
  };
  SpawnOptions o;
  o.argv = {*gcc, "-print-prog-name=cc1"};
  auto cc1 = run_capture(o, 30000);
  ASSERT_TRUE(cc1.ok());
  std::string cc1_path = fs::canonical(cc1->out.substr(0, cc1->out.find('\n'))).string();
  EXPECT_TRUE(inside(cc1_path, trees->toolchain)) << cc1_path << " " << trees->toolchain;
  std::string driver_dir = fs::canonical(*gcc).parent_path().string();
  std::string sh_dir = fs::canonical("/bin/sh").parent_path().string();
  bool has_driver = false, has_sh = false;
  std::vector<std::string> all = trees->trees;
  all.push_back(trees->toolchain);
  for (const std::string& t : trees->trees) {
    has_driver = has_driver || inside(driver_dir, t);
    has_sh = has_sh || inside(sh_dir, t);
  }
  EXPECT_TRUE(has_driver && has_sh) << testing::PrintToString(trees->trees);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(fs::is_directory(all[i])) << all[i];
    EXPECT_EQ(fs::canonical(all[i]).string(), all[i]) << "pinned trees are real paths";
    for (size_t j = 0; j < all.size(); ++j)
      if (i != j) {
        EXPECT_FALSE(inside(all[i], all[j])) << all[i] << " in " << all[j];
      }
  }
}

}  // namespace
}  // namespace sealrun::cli
