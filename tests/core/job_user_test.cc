// The job user and the owned directories handed to it.
#include "core/job_user.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace
}  // namespace sealrun
