// SPDX-License-Identifier: Apache-2.0
// Unit tests of the build-directory rules: openat2 beneath the build directory refuses symlinks
// and escapes, and outputs are installed into an input root without writing through its links.
#include "remote/build_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun::remote {
namespace {

namespace fs = std::filesystem;
using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

TEST(BuildDir, OpensOnlyBeneathWithoutSymlinks) {
  TempDir dir;
  fs::create_directories(dir / "build/a/root");
  fs::create_directories(dir / "outside");
  fs::create_symlink(dir / "outside", dir / "build/link");
  fs::create_symlink("/", dir / "build/a/root/up");
  auto b = BuildDir::open(dir / "build");
  ASSERT_TRUE(b.ok()) << b.error().message();
  auto root = b->directory("a/root");
  ASSERT_TRUE(root.ok()) << root.error().message();
  EXPECT_EQ(*root, fs::canonical(dir / "build/a/root").string());

  auto via_link = b->open_beneath("link/x", O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_FALSE(via_link.ok());
  EXPECT_NE(via_link.error().message().find("symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "outside/x"));
  auto escape = b->open_beneath("a/../../outside", O_PATH);
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.error().message().find("outside the build directory"), std::string::npos);
  EXPECT_FALSE(b->directory("a/root/up/etc").ok());
  EXPECT_FALSE(b->directory("missing").ok());
  auto made = b->open_beneath("a/stdout", O_WRONLY | O_CREAT | O_EXCL, 0644);
  EXPECT_TRUE(made.ok());
  EXPECT_FALSE(b->open_beneath("a/stdout", O_WRONLY | O_CREAT | O_EXCL, 0644).ok());
}

TEST(BuildDir, OutputsAreInstalledBesideAndRenamedOverNeverWrittenThrough) {
  TempDir dir;
  fs::create_directories(dir / "build/a/root/sub");
  fs::create_directories(dir / "build/cache");
  fs::create_directories(dir / "out/sub");
  fs::create_directories(dir / "out/new/deeper");
  fs::create_directories(dir / "outside");
  // An input hard-linked from bb_worker's file cache, as a native build directory does it.
  write_text(dir / "build/cache/input", "cached input\n");
  fs::create_hard_link(dir / "build/cache/input", dir / "build/a/root/sub/input");
  write_text(dir / "out/sub/input", "changed by the action\n");
  write_text(dir / "out/new/deeper/tool", "#!/bin/sh\n");
  ::chmod((dir / "out/new/deeper/tool").c_str(), 04755);  // set-uid is not carried over
  fs::create_symlink("/etc/passwd", dir / "out/link");    // not a regular file: left out
  auto b = BuildDir::open(dir / "build");
  ASSERT_TRUE(b.ok()) << b.error().message();
  uid_t uid = ::geteuid() == 0 ? 4242 : ::geteuid();
  gid_t gid = ::geteuid() == 0 ? 4242 : ::getegid();
  auto n = install_outputs(*b, "a/root", dir / "out", uid, gid, 100);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(read_text(dir / "build/a/root/sub/input"), "changed by the action\n");
  EXPECT_EQ(read_text(dir / "build/cache/input"), "cached input\n");  // the cache is untouched
  struct stat st {};
  ASSERT_EQ(::stat((dir / "build/a/root/new/deeper/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_uid, uid);
  ASSERT_EQ(::stat((dir / "build/a/root/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid);  // directories made for outputs belong to the input root's owner
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "build/a/root/link")));

  // A symlink in the input root never leads an output elsewhere.
  fs::create_symlink(dir / "outside", dir / "build/a/root/escape");
  fs::create_directories(dir / "out2/escape");
  write_text(dir / "out2/escape/x", "x\n");
  auto refused = install_outputs(*b, "a/root", dir / "out2", uid, gid, 100);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("symbolic link"), std::string::npos)
      << refused.error().message();
  EXPECT_FALSE(fs::exists(dir / "outside/x"));
  EXPECT_EQ(*install_outputs(*b, "a/root", dir / "no-such-dir", uid, gid, 100), 0u);
  EXPECT_FALSE(install_outputs(*b, "a/root", dir / "out", uid, gid, 1).ok());  // bounded
}

}  // namespace
}  // namespace sealrun::remote
