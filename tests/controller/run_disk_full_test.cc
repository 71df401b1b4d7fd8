// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 15 through the whole pipeline: the receipt cannot be written because the disk is full.
// The state directory's results/ is a 1 MiB tmpfs (in a private mount namespace of this test
// process, which sealrun inherits, so nothing outlives the test), and the job itself fills it
// through /out. The run must exit non-zero with a message naming the receipt and the cause, and
// leave neither a receipt nor a partial temporary file behind.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

class RunDiskFullTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (CI runs the suite as root)";
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << "unshare(CLONE_NEWNS): " << std::strerror(errno);
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
    results_ = state_ + "/results";
    fs::create_directories(results_);
    ASSERT_EQ(
        ::mount("tmpfs", results_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755"), 0)
        << "mount tmpfs: " << std::strerror(errno);
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(results_.c_str(), MNT_DETACH);
  }

  std::string results_;
  bool mounted_ = false;
};

TEST_F(RunDiskFullTest, ReceiptThatCannotBeWrittenLeavesNoFileAndExitsNonZeroSayingWhy) {
  // free_min_bytes 0: the free-space guard would otherwise stop a job on a 1 MiB file system
  // before it could fill it, and the receipt would be written.
  auto a =
      freeze("dd if=/dev/zero of=/out/fill bs=4k 2>/dev/null; exit 0", {"limits.free_min_bytes=0"});
  auto c = run(a, "full");
  EXPECT_NE(c.status.code, 0) << c.out << c.err;
  EXPECT_EQ(c.status.code, 7) << c.err;  // ACCEPTANCE 15 asks non-zero; CONTRACT: 7 wins
  EXPECT_NE(c.err.find("receipt could not be written"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("No space left on device"), std::string::npos) << c.err;
  // No receipt path is printed: there is no receipt.
  EXPECT_EQ(c.out.find("receipt.json"), std::string::npos) << c.out;

  const fs::path run_dir = results_ + "/full";
  ASSERT_TRUE(fs::is_directory(run_dir));
  EXPECT_TRUE(fs::exists(run_dir / "out" / "fill"));  // the job really filled the disk
  for (const auto& entry : fs::directory_iterator(run_dir))
    EXPECT_EQ(entry.path().filename().string().find("receipt"), std::string::npos)
        << "left behind: " << entry.path();
  // The job and its group are gone even though the receipt is not there to say so.
  EXPECT_FALSE(fs::exists(state_ + "/owned/full"));
  EXPECT_TRUE(no_process_with(dir_.str()));
}

}  // namespace
}  // namespace sealrun::testing
