// SPDX-License-Identifier: Apache-2.0
// Faults around the controller (ACCEPTANCE 13 and 14): a SIGTERM is turned into a stopped job and
// a written receipt; a SIGKILL leaves no job process behind within a second, and `sealrun sweep`
// removes what the killed run left.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

// Waits until the job has written /out/started (it is running), at most 30 s.
bool wait_started(const std::string& state, const std::string& id) {
  for (int i = 0; i < 300; ++i) {
    if (fs::exists(live_out_dir(state, id) + "/started")) return true;
    ::usleep(100 * 1000);
  }
  return false;
}

TEST_F(RunTest, SigtermToTheControllerStopsTheJobAndWritesTheReceipt) {
  // The marker names this test process: the same case runs under two CTest names (its own and
  // ACCEPTANCE.14's), possibly at once, and each must look for its own job only.
  const std::string marker = "marker-sigterm-run-" + std::to_string(::getpid()) + "-";
  auto a = freeze("touch /out/started; exec sleep 120 # " + marker);
  SpawnOptions o =
      sealrun_options({"run", a.path, "--sha256", a.sha256, "--id", "term", "--state-dir", state_});
  auto controller = spawn(o);
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  ASSERT_TRUE(wait_started(state_, "term"));
  ASSERT_TRUE(controller->signal(SIGTERM).ok());
  auto st = controller->wait_for(60000);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->has_value()) << "the controller did not end after SIGTERM";
  int code = (*st)->code;
  EXPECT_TRUE(code == 5 || code == 7) << (*st)->describe();
  auto r = receipt("term");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_NE(r["reason"].get<std::string>().find("SIGTERM"), std::string::npos) << r["reason"];
  EXPECT_EQ(r["stop_confirmed"], true);
  EXPECT_TRUE(no_process_with(marker));
}

TEST_F(RunTest, SigkillToTheControllerLeavesNoJobAndSweepCleansUp) {
  const std::string marker = "marker-sigkill-run-" + std::to_string(::getpid()) + "-";  // as above
  auto a = freeze("touch /out/started; sleep 120 # " + marker);
  SpawnOptions o = sealrun_options(
      {"run", a.path, "--sha256", a.sha256, "--id", "killed", "--state-dir", state_});
  auto controller = spawn(o);
  ASSERT_TRUE(controller.ok());
  ASSERT_TRUE(wait_started(state_, "killed"));
  ASSERT_FALSE(no_process_with(marker));  // the job runs
  ASSERT_TRUE(controller->signal(SIGKILL).ok());
  ASSERT_TRUE(controller->wait().ok());
  int64_t deadline = monotonic_ms() + 1000;
  while (!no_process_with(marker) && monotonic_ms() < deadline) ::usleep(20 * 1000);
  EXPECT_TRUE(no_process_with(marker)) << "a job process survived its controller by 1 s";

  // What the killed run left: its grant record, owned root and resource group.
  EXPECT_TRUE(fs::exists(state_ + "/owned/killed"));
  auto sweep = sealrun({"sweep", "--state-dir", state_});
  EXPECT_EQ(sweep.status.code, 0) << sweep.out << sweep.err;
  EXPECT_NE(sweep.out.find("killed"), std::string::npos) << sweep.out;
  EXPECT_FALSE(fs::exists(state_ + "/owned/killed")) << "sweep left the owned root";
  EXPECT_TRUE(fs::is_empty(state_ + "/grants") || !fs::exists(state_ + "/grants/killed.json"))
      << "sweep left the grant record";
  auto again = sealrun({"sweep", "--state-dir", state_});
  EXPECT_EQ(again.status.code, 0) << again.out << again.err;
}

}  // namespace
}  // namespace sealrun::testing
