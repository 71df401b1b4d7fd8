// SPDX-License-Identifier: Apache-2.0
// Unit tests of learn/: the mountinfo reading and the choice of mounts to mark, the link resolver
// and the closure's link finding on a temporary tree, and the closure's admission fields.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "containment/bwrap_argv.h"
#include "learn/access_recorder.h"
#include "learn/closure.h"
#include "learn/closure_pins.h"
#include "tests/support/temp_dir.h"

namespace sealrun::learn {
namespace {

namespace fs = std::filesystem;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

TEST(MountinfoTest, MountPointsAreTheFifthFieldUnescaped) {
  std::string text =
      "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "30 27 254:0 /usr /usr ro,relatime - ext4 /dev/vda rw\n"
      "31 27 0:40 / /with\\040space rw - tmpfs tmpfs rw\n";
  auto mounts = mountinfo_mounts(text);
  std::vector<std::string> points;
  for (const auto& m : mounts) points.push_back(m.point);
  EXPECT_EQ(points, (std::vector<std::string>{"/proc", "/", "/usr", "/with space"}));
  EXPECT_EQ(mounts[2].id, 30u);
  EXPECT_TRUE(mountinfo_mounts("").empty());
  EXPECT_TRUE(mountinfo_mounts("garbage\n").empty());
  EXPECT_TRUE(mountinfo_mounts("x 1 0:1 / /p rw\n").empty()) << "a malformed id";
}

TEST(MountsToMarkTest, HostTreesAndTheirSubmountsButNotTheJobsOwnMounts) {
  std::vector<std::string> points = {"/",     "/usr", "/usr/lib/gcc/x86_64-linux-gnu/12",
                                     "/etc",  "/src", "/usr/local/sub",
                                     "/usrx", "/tmp", "/usr"};
  auto marked =
      mounts_to_mark(points, {"/usr", "/etc"}, {"/src", "/usr/lib/gcc/x86_64-linux-gnu/12"});
  EXPECT_EQ(marked, (std::vector<std::string>{"/etc", "/usr", "/usr/local/sub"}));
}

TEST(PathWithinTest, ComponentBoundaries) {
  EXPECT_TRUE(path_within("/usr", "/usr"));
  EXPECT_TRUE(path_within("/usr/bin", "/usr"));
  EXPECT_FALSE(path_within("/usrx", "/usr"));
  EXPECT_FALSE(path_within("/us", "/usr"));
  EXPECT_TRUE(path_within("/anything", "/"));
}

TEST(PathWithinTest, AnyAndOverlapping) {
  const std::vector<std::string> places = {"/src", "/usr/share/cmake-3.25"};
  EXPECT_TRUE(path_within_any("/src/a", places));
  EXPECT_FALSE(path_within_any("/usr/share", places));
  EXPECT_TRUE(path_overlaps_any("/usr/share", places)) << "above a place: the way into it";
  EXPECT_TRUE(path_overlaps_any("/usr/share/cmake-3.25/Modules", places));
  EXPECT_FALSE(path_overlaps_any("/usr/share/cmake", places));
  EXPECT_FALSE(path_overlaps_any("/srcx", places));
  EXPECT_EQ(parent_path("/usr/bin"), "/usr");
  EXPECT_EQ(parent_path("/usr"), "/");
  EXPECT_EQ(parent_path("/"), "/");
}

TEST(ResolveLinksTest, RecordsEveryLinkOfTheChainIncludingDirectoryLinks) {
  TempDir t;
  fs::create_directories(t / "real/bin");
  write_text(t / "real/bin/tool-12", "x");
  fs::create_symlink("tool-12", t / "real/bin/tool");         // relative
  fs::create_symlink(t / "real", t / "alias");                // absolute, a directory
  fs::create_symlink("../alias/bin/tool", t / "real/entry");  // through the directory link
  std::vector<HostLink> chain;
  auto final_path = resolve_recording_links(t / "real/entry", &chain);
  ASSERT_TRUE(final_path.ok()) << final_path.error().message();
  EXPECT_EQ(*final_path, fs::canonical(t / "real/bin/tool-12").string());
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].path, t / "real/entry");
  EXPECT_EQ(chain[0].target, "../alias/bin/tool");
  EXPECT_EQ(chain[1].path, t / "alias");
  EXPECT_EQ(chain[2].path, t / "real/bin/tool");
  EXPECT_EQ(chain[2].target, "tool-12");
}

TEST(ResolveLinksTest, ALoopIsAnErrorNotAHang) {
  TempDir t;
  fs::create_symlink("b", t / "a");
  fs::create_symlink("a", t / "b");
  std::vector<HostLink> chain;
  auto r = resolve_recording_links(t / "a", &chain);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("symbolic links"), std::string::npos);
}

TEST(BuildClosureTest, KeepsLinksThatLeadToRecordedPathsOnly) {
  TempDir t;
  std::string root = fs::canonical(t.path()).string();
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/include/sub");
  write_text(root + "/bin/cc-12", "cc");
  write_text(root + "/bin/other", "other");
  fs::create_symlink("cc-12", root + "/bin/cc");
  fs::create_symlink("other", root + "/bin/unrelated");
  fs::create_symlink("missing", root + "/bin/dangling");
  ObservedAccess seen;
  seen.files = {root + "/bin/cc-12", "/outside/the/roots"};
  seen.dirs = {root + "/include/sub"};
  auto c = build_closure(seen, {root}, {});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->files, (std::vector<std::string>{root + "/bin/cc-12"}));
  EXPECT_EQ(c->dirs, (std::vector<std::string>{root + "/include/sub"}));
  bool cc = false;
  for (const HostLink& l : c->links) {
    EXPECT_NE(l.path, root + "/bin/unrelated");
    EXPECT_NE(l.path, root + "/bin/dangling");
    if (l.path == root + "/bin/cc") cc = l.target == "cc-12";
  }
  EXPECT_TRUE(cc) << "the link to a recorded file is kept";
}

TEST(BuildClosureTest, TooManyFilesIsAClearError) {
  TempDir t;
  std::string root = fs::canonical(t.path()).string();
  ObservedAccess seen;
  for (int i = 0; i < 3; ++i) {
    write_text(root + "/f" + std::to_string(i), "x");
    seen.files.insert(root + "/f" + std::to_string(i));
  }
  ClosureLimits limits;
  limits.max_files = 2;
  auto c = build_closure(seen, {root}, limits);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("3 host files, over the limit of 2"), std::string::npos)
      << c.error().message();
}

TEST(BuildClosureTest, AFileThatIsNoLongerThereIsAnError) {
  TempDir t;
  std::string root = fs::canonical(t.path()).string();
  ObservedAccess seen;
  seen.files = {root + "/gone"};
  auto c = build_closure(seen, {root}, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find(root + "/gone"), std::string::npos);
}

TEST(ClosurePinsTest, HashesAndWritesTheFieldsInCanonicalForm) {
  TempDir t;
  std::string root = fs::canonical(t.path()).string();
  write_text(root + "/a", "abc");
  Closure c;
  c.files = {root + "/a"};
  c.links = {{root + "/l", "a"}};
  c.dirs = {root};
  auto pinned = pin_closure(c, 1 << 20);
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  ASSERT_EQ(pinned->files.size(), 1u);
  EXPECT_EQ(pinned->files[0].sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // SHA-256("abc")
  EXPECT_EQ(pinned->bytes, 3u);

  auto bytes = learned_admission_bytes("{\"schema\": \"x\", \"z\": [1, 2]}\n", *pinned);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  auto doc = nlohmann::json::parse(*bytes);
  EXPECT_EQ(doc["host_files"][0]["path"], root + "/a");
  EXPECT_EQ(doc["host_links"][0]["target"], "a");
  EXPECT_EQ(doc["host_dirs"][0], root);
  // One array member per line, as canonical_admission_bytes() writes host_tools.
  EXPECT_NE(bytes->find("\"host_files\": [\n    {\"path\":"), std::string::npos) << *bytes;

  auto twice = learned_admission_bytes(*bytes, *pinned);
  EXPECT_FALSE(twice.ok()) << "a base that already has the fields is refused";
}

TEST(ClosurePinsTest, OverTheByteLimitNothingIsHashed) {
  TempDir t;
  std::string root = fs::canonical(t.path()).string();
  write_text(root + "/a", "abcdef");
  Closure c;
  c.files = {root + "/a"};
  auto pinned = pin_closure(c, 5);
  ASSERT_FALSE(pinned.ok());
  EXPECT_NE(pinned.error().message().find("--learn-max-bytes"), std::string::npos);
}

TEST(BwrapArgvTest, TheStartGateIsBwrapsBlockFd) {
  Grant g;
  g.spec.argv = {"/bin/true"};
  BwrapFds fds;
  fds.block = 9;
  auto argv = build_bwrap_argv("/usr/bin/bwrap", g, fds);
  auto it = std::find(argv.begin(), argv.end(), "--block-fd");
  ASSERT_NE(it, argv.end());
  EXPECT_EQ(*(it + 1), "9");
  EXPECT_LT(it - argv.begin(), std::find(argv.begin(), argv.end(), "--") - argv.begin());
  fds.block = -1;
  argv = build_bwrap_argv("/usr/bin/bwrap", g, fds);
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--block-fd"), argv.end());
}

}  // namespace
}  // namespace sealrun::learn
