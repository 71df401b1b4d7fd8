// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 27: a source tree changed on the host after verification never reaches the job under
// a `pass`. The job sees a private snapshot of exactly the verified bytes (docs/admission.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/process.h"
#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(RunTest, ASourceChangedOnTheHostDuringTheRunDoesNotReachTheJob) {
  // The job reads input.txt only once the test, after rewriting the host's copy, has put a file
  // into its /scratch (the one directory both can reach).
  auto a = freeze(
      "while [ -z \"$(ls /scratch)\" ]; do sleep 0.05; done; "
      "cat input.txt > /out/copy.txt");
  auto opts =
      sealrun_options({"run", a.path, "--sha256", a.sha256, "--id", "snap", "--state-dir", state_});
  auto child = spawn(opts);
  ASSERT_TRUE(child.ok()) << child.error().message();
  // Once the job runs (its scratch exists), change the source on the host, then let it go on.
  // In the controller's mount namespace (live(), run_test_support.h).
  auto scratch_now = [&] { return live(state_, state_ + "/owned/snap/scratch"); };
  std::error_code ec;
  int64_t deadline = monotonic_ms() + 60000;
  while (!fs::exists(scratch_now(), ec) && monotonic_ms() < deadline) ::usleep(20 * 1000);
  const std::string scratch = scratch_now();
  ASSERT_TRUE(fs::exists(scratch));
  write_text(src_ + "/input.txt", "CHANGED ON THE HOST\n");
  write_text(scratch + "/go", "");
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->code, 0);
  EXPECT_EQ(read_text(state_ + "/results/snap/out/copy.txt"), "input\n")
      << "the job must build the verified bytes, not the host's later ones";
  auto r = receipt("snap");
  EXPECT_EQ(r["state"], "built");
}

}  // namespace
}  // namespace sealrun::testing
