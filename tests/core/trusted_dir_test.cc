// SPDX-License-Identifier: Apache-2.0
// The StrictModes rule of core/trusted_dir.h: as data (owner and mode of one directory) and as a
// walk over real directories — another owner, group or world write access (a sticky ancestor
// excepted), a link owned by someone else: each refused with the directory named; a trusted link
// is followed; a missing last directory is made and checked.
#include "core/trusted_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/job_user.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct stat dir_stat(uid_t uid, unsigned mode) {
  struct stat st {};
  st.st_mode = S_IFDIR | mode;
  st.st_uid = uid;
  return st;
}

TEST(CheckTrustedDir, OwnerAndModeTable) {
  const uid_t other = ::geteuid() + 4242;
  struct Case {
    uid_t uid;
    unsigned mode;
    bool ancestor;
    bool ok;
    const char* says;
  } cases[] = {
      {0, 0755, false, true, ""},
      {::geteuid(), 0700, false, true, ""},
      {0, 0711, true, true, ""},
      {other, 0755, false, false, "belongs to"},
      {other, 0700, true, false, "belongs to"},
      {0, 0775, false, false, "its group can write"},
      {0, 0757, false, false, "everyone can write"},
      {0, 01777, true, true, ""},                      // /tmp as an ancestor
      {0, 01770, true, true, ""},                      // a sticky group directory too
      {0, 01777, false, false, "everyone can write"},  // but not as the state directory
      {0, 0777, true, false, "sticky"},                // world-writable without the sticky bit
      {0, 0775, true, false, "its group can write"},
  };
  for (const auto& c : cases) {
    Status st = check_trusted_dir(dir_stat(c.uid, c.mode), "/x/state", c.ancestor);
    EXPECT_EQ(st.ok(), c.ok) << c.uid << " " << std::oct << c.mode;
    if (!c.ok) {
      EXPECT_NE(st.error().message().find(c.says), std::string::npos) << st.error().message();
      EXPECT_NE(st.error().message().find("/x/state"), std::string::npos);
    }
  }
  struct stat file = dir_stat(0, 0644);
  file.st_mode = S_IFREG | 0644;
  EXPECT_FALSE(check_trusted_dir(file, "/x/f", false).ok());
}

class TrustedWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "handing directories to another user needs root (CI is root)";
    auto user = lookup_job_user(testing::test_job_user_name());
    ASSERT_TRUE(user.ok()) << user.error().message();
    user_ = *user;
    fs::create_directories(tmp_ / "a/state");
  }
  TempDir tmp_;
  JobUser user_;
};

TEST_F(TrustedWalk, AcceptsRootsOwnDirectoriesAndKeepsTheDescriptor) {
  auto d = open_trusted_dir(tmp_ / "a/state", false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->path, tmp_ / "a/state");
  struct stat a {
  }, b{};
  ASSERT_EQ(::fstat(d->fd.get(), &a), 0);
  ASSERT_EQ(::stat((tmp_ / "a/state").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  // Relative and unnormalised spellings name the same directory.
  auto again = open_trusted_dir(tmp_ / "a/./state/", false);
  EXPECT_TRUE(again.ok());
}

TEST_F(TrustedWalk, RefusesADirectoryOfTheJobUserOrAWritableAncestor) {
  ASSERT_EQ(::chown((tmp_ / "a/state").c_str(), user_.uid, user_.gid), 0);
  auto d = open_trusted_dir(tmp_ / "a/state", false);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find(tmp_ / "a/state"), std::string::npos) << d.error().message();
  EXPECT_NE(d.error().message().find(user_.name), std::string::npos) << d.error().message();
  ASSERT_EQ(::chown((tmp_ / "a/state").c_str(), 0, 0), 0);

  fs::permissions(tmp_ / "a", fs::perms::all);  // 0777 without the sticky bit
  d = open_trusted_dir(tmp_ / "a/state", false);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find(tmp_ / "a" + " has mode 0777"), std::string::npos)
      << d.error().message();
  fs::permissions(tmp_ / "a", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_TRUE(open_trusted_dir(tmp_ / "a/state", false).ok());  // as /tmp
}

TEST_F(TrustedWalk, FollowsOnlyLinksATrustedUserOwns) {
  fs::create_directory_symlink(tmp_ / "a/state", tmp_ / "link");
  auto d = open_trusted_dir(tmp_ / "link", false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ(::lchown((tmp_ / "link").c_str(), user_.uid, user_.gid), 0);
  d = open_trusted_dir(tmp_ / "link", false);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("is a symlink that belongs to"), std::string::npos)
      << d.error().message();
}

TEST_F(TrustedWalk, CreatesTheLastDirectoryOnlyWhenAsked) {
  EXPECT_FALSE(open_trusted_dir(tmp_ / "a/new", false).ok());
  EXPECT_FALSE(open_trusted_dir(tmp_ / "missing/new", true).ok());  // a parent is never made
  auto d = open_trusted_dir(tmp_ / "a/new", true, 0755);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_TRUE(fs::is_directory(tmp_ / "a/new"));
}

}  // namespace
}  // namespace sealrun
