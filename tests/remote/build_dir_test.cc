// Unit tests of the build-directory rules: openat2 beneath the build directory refuses symlinks
// and escapes, and the two ownership walks around a job touch only what they should.
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

TEST(BuildDir, OwnershipIsLentAndGivenBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing owners needs root";
  TempDir dir;
  std::string root = dir / "root";
  fs::create_directories(root + "/sub");
  write_text(root + "/input.txt", "in\n");
  fs::create_symlink("/etc/passwd", root + "/link");
  const uid_t lent = 4242;
  ASSERT_TRUE(give_directories(root, lent, lent, 1000).ok());
  struct stat st {};
  ASSERT_EQ(::lstat((root + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, lent);
  ASSERT_EQ(::lstat((root + "/input.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // files keep their owner
  // What "the job" made is the lent uid's; all of it comes back, symlinks not followed.
  write_text(root + "/sub/new.txt", "out\n");
  ASSERT_EQ(::chown((root + "/sub/new.txt").c_str(), lent, lent), 0);
  ASSERT_EQ(::lchown((root + "/link").c_str(), lent, lent), 0);
  struct stat passwd_before {};
  ASSERT_EQ(::stat("/etc/passwd", &passwd_before), 0);
  auto changed = return_ownership(root, lent, 0, 0, 1000);
  ASSERT_TRUE(changed.ok()) << changed.error().message();
  EXPECT_EQ(*changed, 4u);  // root, sub, sub/new.txt, link
  for (const char* rel : {"", "/sub", "/sub/new.txt", "/link"}) {
    ASSERT_EQ(::lstat((root + rel).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << rel;
  }
  struct stat passwd_after {};
  ASSERT_EQ(::stat("/etc/passwd", &passwd_after), 0);
  EXPECT_EQ(passwd_after.st_uid, passwd_before.st_uid);
  EXPECT_FALSE(return_ownership(root, lent, 0, 0, 2).ok());  // bounded
}

}  // namespace
}  // namespace sealrun::remote
