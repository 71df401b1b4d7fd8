// SPDX-License-Identifier: Apache-2.0
// The SPANK plugin's pids delegation (contrib/slurm/delegate.h) against a temp tree standing in
// for the pids hierarchy: the layout, who owns what, joining, and what removal leaves. The real
// hierarchy is exercised by the slurm-labelled cluster tests.
#include "delegate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

class DelegateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char why[256];
    root_ = sealrun_delegate_open_root(dir_.str().c_str(), 0, why, sizeof why);
    ASSERT_GE(root_, 0) << why;
  }
  void TearDown() override { ::close(root_); }
  std::string step_path(uid_t uid, uint32_t job, const std::string& step) const {
    return dir_ / (std::string(SEALRUN_DELEGATE_TOP) + "/uid_" + std::to_string(uid) + "/job_" +
                   std::to_string(job) + "/" + step);
  }
  TempDir dir_;
  int root_ = -1;
};

TEST(DelegateStepName, SlurmsNames) {
  char name[32];
  sealrun_delegate_step_name(0, name);
  EXPECT_STREQ(name, "step_0");
  sealrun_delegate_step_name(17, name);
  EXPECT_STREQ(name, "step_17");
  sealrun_delegate_step_name(SEALRUN_SLURM_BATCH_SCRIPT, name);
  EXPECT_STREQ(name, "step_batch");
  sealrun_delegate_step_name(SEALRUN_SLURM_EXTERN_CONT, name);
  EXPECT_STREQ(name, "step_extern");
  sealrun_delegate_step_name(SEALRUN_SLURM_INTERACTIVE_STEP, name);
  EXPECT_STREQ(name, "step_interactive");
}

TEST_F(DelegateTest, MakesTheStepGroupForTheUserOnly) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root (CI runs as root)";
  char why[256];
  int fd = sealrun_delegate_make(root_, 1001, 1002, 42, "step_0", why, sizeof why);
  ASSERT_GE(fd, 0) << why;
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_uid, 1001u);
  EXPECT_EQ(st.st_gid, 1002u);
  // Every level above the step stays root's, so the user cannot rename or replace it.
  for (const char* level : {"", "/uid_1001", "/uid_1001/job_42"}) {
    struct stat up {};
    ASSERT_EQ(::stat((dir_ / (std::string(SEALRUN_DELEGATE_TOP) + level)).c_str(), &up), 0);
    EXPECT_EQ(up.st_uid, 0u) << level;
    EXPECT_EQ(up.st_mode & 0777, 0755u) << level;
  }
  // A second task of the same step reuses the group.
  int again = sealrun_delegate_make(root_, 1001, 1002, 42, "step_0", why, sizeof why);
  EXPECT_GE(again, 0) << why;
  ::close(again);

  // Joining writes the pid to cgroup.procs (on the real hierarchy the kernel made that file).
  write_text(step_path(1001, 42, "step_0") + "/cgroup.procs", "");
  ASSERT_EQ(sealrun_delegate_join(fd, 4242, why, sizeof why), 0) << why;
  EXPECT_EQ(read_text(step_path(1001, 42, "step_0") + "/cgroup.procs"), "4242");
  ::close(fd);
}

TEST_F(DelegateTest, NeverFollowsASymlinkOnTheWay) {
  char why[256];
  fs::create_directories(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / SEALRUN_DELEGATE_TOP);
  EXPECT_EQ(sealrun_delegate_make(root_, 0, 0, 1, "step_0", why, sizeof why), -1);
  EXPECT_TRUE(fs::is_empty(dir_ / "elsewhere"));
}

TEST_F(DelegateTest, RemovalKeepsWhatAKilledRunLeftAndClearsEmptyLeftovers) {
  char why[256];
  // Job 7's step held a run's group when its step ended (the run was killed): it stays.
  int fd = sealrun_delegate_make(root_, 0, 0, 7, "step_batch", why, sizeof why);
  ASSERT_GE(fd, 0) << why;
  ::close(fd);
  fs::create_directory(step_path(0, 7, "step_batch") + "/sealrun-r1.100.200");
  EXPECT_EQ(sealrun_delegate_remove(root_, 0, 7, "step_batch", why, sizeof why), -1);
  EXPECT_NE(std::string(why).find("step_batch"), std::string::npos) << why;
  EXPECT_TRUE(fs::exists(step_path(0, 7, "step_batch") + "/sealrun-r1.100.200"));

  // `sealrun sweep` removes the run's group; the next step of the same user that ends clears
  // job 7's empty groups along with its own.
  fs::remove(step_path(0, 7, "step_batch") + "/sealrun-r1.100.200");
  fd = sealrun_delegate_make(root_, 0, 0, 8, "step_0", why, sizeof why);
  ASSERT_GE(fd, 0) << why;
  ::close(fd);
  EXPECT_EQ(sealrun_delegate_remove(root_, 0, 8, "step_0", why, sizeof why), 0) << why;
  EXPECT_FALSE(fs::exists(dir_ / (std::string(SEALRUN_DELEGATE_TOP) + "/uid_0")));
  EXPECT_TRUE(fs::exists(dir_ / SEALRUN_DELEGATE_TOP));

  // Nothing there at all is not an error.
  EXPECT_EQ(sealrun_delegate_remove(root_, 5, 9, "step_0", why, sizeof why), 0) << why;
}

}  // namespace
}  // namespace sealrun::testing
