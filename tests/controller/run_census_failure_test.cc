// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 32, end to end: the census cannot measure → recorded, and in enforcing mode the job is
// stopped. The controller runs as root and a job cannot make a root walk fail, so the fault comes
// from outside, as an operator's mistake would: while the job runs, the run's owned file system is
// lazily unmounted from the controller's mount namespace (the job keeps its own view of it). The
// census's next statfs then reaches the state directory's file system instead of the owned one and
// says so; an enforcing run stops with exit 6 naming the census failure, a report-only run
// records it and lets the job end. Either way the receipt is written, the stop confirmed, and
// nothing of the run is left mounted.
#include <sys/mount.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool mounted_at(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.find(" " + path + " ") != std::string::npos) return true;
  return false;
}

class CensusFailureTest : public RunTest {
 protected:
  // Starts a run of `a` with `mode`, waits for the job to start, unmounts the owned file system
  // under it, and returns the controller's result.
  Captured run_and_unmount(const Frozen& a, const std::string& id, const std::string& mode) {
    std::string owned = state_ + "/owned/" + id;
    Captured result;
    std::thread controller([&] { result = run(a, id, {"--mode", mode}); });
    bool seen = false;
    for (int64_t deadline = monotonic_ms() + 60000; monotonic_ms() < deadline && !seen;) {
      std::error_code ec;
      seen = fs::exists(live_out_dir(state_, id) + "/started", ec);
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // The owned file system is mounted in the controller's own mount namespace (private_ns.h):
    // the operator's mistake is made there.
    int64_t pid = owned_fs_controller(state_, id);
    if (seen && pid > 0) {
      SpawnOptions o;
      o.argv = {
          "/usr/bin/nsenter", "-t", std::to_string(pid), "-m", "/usr/bin/umount", "-l", owned};
      auto u = run_capture(o, 30000);
      EXPECT_TRUE(u.ok() && u->status.code == 0) << owned << (u.ok() ? u->err : "");
      unmounted_ = u.ok() && u->status.code == 0;
    }
    controller.join();
    return result;
  }
  bool unmounted_ = false;
};

TEST_F(CensusFailureTest, AnEnforcingRunIsStoppedWithExit6AndTheReceiptSaysWhy) {
  auto a = freeze("touch /out/started; while :; do sleep 1; done",
                  {"limits.census_interval_ms=100", "limits.wall_clock_s=120"});
  int64_t start = monotonic_ms();
  auto c = run_and_unmount(a, "cf1", "enforcing");
  ASSERT_TRUE(unmounted_) << "the job never started, or its owned file system was not mounted";
  EXPECT_EQ(c.status.code, 6) << c.out << c.err;
  EXPECT_LT(monotonic_ms() - start, 60000) << "stopped by the census, not by the wall clock";
  json r = receipt("cf1");
  EXPECT_EQ(r["state"], "failed");
  EXPECT_EQ(r["guard"]["name"], "census_failed") << r["guard"].dump();
  EXPECT_NE(r["reason"].get<std::string>().find("could not measure"), std::string::npos)
      << r["reason"];
  EXPECT_NE(r.dump().find("no longer the owned file system"), std::string::npos)
      << "the census names what it could not measure";
  EXPECT_EQ(r["stop_confirmed"], true);
  EXPECT_FALSE(mounted_at(state_ + "/owned/cf1"));
  EXPECT_FALSE(fs::exists(state_ + "/owned/cf1"));
  for (const auto& entry : fs::directory_iterator(state_ + "/ownedfs"))
    EXPECT_EQ(entry.path().filename(), "templates") << "the run's image and record are removed";
  for (const auto& entry : fs::directory_iterator(state_ + "/grants"))
    EXPECT_EQ(entry.path().filename(), ".lock") << "the grant record is removed once all is gone";
}

TEST_F(CensusFailureTest, AReportOnlyRunRecordsItAndTheJobEndsOnItsOwn) {
  auto a = freeze("touch /out/started; sleep 3; echo done > /out/done",
                  {"limits.census_interval_ms=100"});
  auto c = run_and_unmount(a, "cf2", "report-only");
  ASSERT_TRUE(unmounted_) << "the job never started, or its owned file system was not mounted";
  json r = receipt("cf2");
  EXPECT_NE(r.dump().find("could not measure"), std::string::npos) << r.dump(2);
  EXPECT_TRUE(r["guard"].is_null() || r["guard"]["name"] != "census_failed") << r["guard"].dump();
  EXPECT_TRUE(fs::exists(state_ + "/results/cf2/out/done")) << c.err;
  EXPECT_EQ(r["stop_confirmed"], true);
  EXPECT_FALSE(mounted_at(state_ + "/owned/cf2"));
}

}  // namespace
}  // namespace sealrun::testing
