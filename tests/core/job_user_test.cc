// SPDX-License-Identifier: Apache-2.0
// The job user and the owned directories handed to it.
#include "core/job_user.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

TEST(JobUser, LooksUpTheConfiguredUserAndRefusesRootAndUnknown) {
  auto user = lookup_job_user(testing::test_job_user_name());
  ASSERT_TRUE(user.ok()) << user.error().message();
  EXPECT_NE(user->uid, 0u);
  auto root = lookup_job_user("root");
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.error().message().find("root"), std::string::npos);
  auto unknown = lookup_job_user("sealrun-no-such-user");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find(".ci/setup"), std::string::npos);
}

TEST(JobUser, OwnedDirIsNewPrivateAndTheJobUsers) {
  auto user = lookup_job_user(testing::test_job_user_name());
  ASSERT_TRUE(user.ok());
  testing::TempDir dir;
  std::string out = dir / "out";
  ASSERT_TRUE(prepare_owned_dir(out, *user).ok());
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  if (::geteuid() == 0) {
    EXPECT_EQ(st.st_uid, user->uid);
    EXPECT_EQ(st.st_gid, user->gid);
  }
  // Never reused.
  EXPECT_FALSE(prepare_owned_dir(out, *user).ok());
}

TEST(JobUser, GiveTreeHandsOverEverythingAndFollowsNoLink) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing owners needs root";
  testing::TempDir dir;
  std::string root = dir / "copy";
  std::filesystem::create_directories(root + "/sub");
  testing::write_text(root + "/sub/file", "x\n");
  std::filesystem::create_symlink("/etc/passwd", root + "/link");
  struct stat passwd_before {};
  ASSERT_EQ(::stat("/etc/passwd", &passwd_before), 0);
  JobUser user{"someone", 4242, 4243, "", true};
  ASSERT_TRUE(give_tree(root, user).ok());
  for (const char* rel : {"", "/sub", "/sub/file", "/link"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((root + rel).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4242u) << rel;
    EXPECT_EQ(st.st_gid, 4243u) << rel;
  }
  struct stat passwd_after {};
  ASSERT_EQ(::stat("/etc/passwd", &passwd_after), 0);
  EXPECT_EQ(passwd_after.st_uid, passwd_before.st_uid);
  EXPECT_FALSE(give_tree(root, user, 2).ok());  // bounded
  user.drop = false;                            // not root's to give: nothing changes
  ASSERT_EQ(::chown((root + "/sub").c_str(), 0, 0), 0);
  ASSERT_TRUE(give_tree(root, user).ok());
  struct stat sub {};
  ASSERT_EQ(::lstat((root + "/sub").c_str(), &sub), 0);
  EXPECT_EQ(sub.st_uid, 0u);
}

}  // namespace
}  // namespace sealrun
