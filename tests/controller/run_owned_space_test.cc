// SPDX-License-Identifier: Apache-2.0
// The owned space of a real run (docs/growth.md; issue 17 item 2):
// as root, with loop devices, it is an ext4 file system of its own sized to owned_max_bytes and
// owned_max_inodes; a write past it fails with ENOSPC in the job, the guard reports "owned space
// full" with exit 6, and nothing of it is left after the run. Where the shape does not fit a file
// system (below 16 MiB), the owned space stays a directory and the receipt says why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OwnedSpaceTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    // CI and the development VM run tests as root, where docs/testbed.md says loop devices work:
    // there this must hold. A non-root developer's run cannot mount anything.
    if (::geteuid() != 0) GTEST_SKIP() << "the owned file system needs root (loop devices, mount)";
  }

  // Nothing of the run's file system is left: no mount on the owned root, no image, no record,
  // no loop device bound to an image under the state directory.
  void expect_nothing_left(const std::string& id) {
    EXPECT_EQ(read_all("/proc/self/mountinfo").find(state_ + "/owned/" + id), std::string::npos);
    EXPECT_FALSE(fs::exists(state_ + "/owned/" + id));
    EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + ".img"));
    EXPECT_FALSE(fs::exists(state_ + "/ownedfs/" + id + ".json"));
    for (const auto& e : fs::directory_iterator("/sys/block")) {
      std::string backing = e.path().string() + "/loop/backing_file";
      if (fs::exists(backing)) {
        EXPECT_EQ(read_all(backing).find(state_), std::string::npos) << backing;
      }
    }
  }
};

TEST_F(OwnedSpaceTest, AWritePastTheLimitFailsWithEnospcAndTheGuardSaysFull) {
  auto a = freeze("dd if=/dev/zero of=/scratch/big bs=1M count=200; echo dd-exit=$? >&2; sleep 60",
                  {"limits.owned_max_bytes=67108864", "limits.census_interval_ms=100"});
  auto c = run(a, "full");
  EXPECT_EQ(c.status.code, 6) << c.out << c.err;
  json r = receipt("full");
  ASSERT_TRUE(r["owned_space"].is_object()) << r.dump(2);
  EXPECT_EQ(r["owned_space"]["kind"], "filesystem") << r["owned_space"].dump();
  EXPECT_EQ(r["owned_space"]["size_bytes"], 64 * kMiB);
  EXPECT_EQ(r["guard"]["name"], "owned_max_bytes");
  EXPECT_NE(r["reason"].get<std::string>().find("owned space full"), std::string::npos)
      << r["reason"];
  // The kernel refused the write: the job saw ENOSPC, and no sample ever saw more than the limit.
  std::string err = r["commands"][0]["stderr"]["tail"];
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(err.find("dd-exit=0"), std::string::npos) << err;
  for (const auto& s : r["samples"]) EXPECT_LE(s["owned_bytes"].get<uint64_t>(), 64 * kMiB) << s;
  EXPECT_EQ(r["stop_confirmed"], true);
  expect_nothing_left("full");
}

TEST_F(OwnedSpaceTest, TheInodeLimitIsTheFileSystemsAndTripsItsGuard) {
  auto a = freeze(
      // `true`, not `:`: a failed redirection of a special built-in would end the shell.
      "i=0; while true 2>/dev/null >/scratch/f$i; do i=$((i+1)); done; echo made=$i >&2; sleep 60",
      {"limits.owned_max_bytes=67108864", "limits.owned_max_inodes=2048",
       "limits.census_interval_ms=100"});
  auto c = run(a, "inodes");
  EXPECT_EQ(c.status.code, 6) << c.out << c.err;
  json r = receipt("inodes");
  EXPECT_EQ(r["owned_space"]["kind"], "filesystem");
  EXPECT_EQ(r["owned_space"]["inodes"], 2048u);
  EXPECT_EQ(r["guard"]["name"], "owned_max_inodes");
  std::string err = r["commands"][0]["stderr"]["tail"];
  auto at = err.find("made=");
  ASSERT_NE(at, std::string::npos) << err;
  uint64_t made = std::stoull(err.substr(at + 5));
  // The root, the marker, scratch/, logs/ and out/ are in the same count: fewer files than 2048.
  EXPECT_GT(made, 1900u);
  EXPECT_LT(made, 2048u);
  expect_nothing_left("inodes");
}

TEST_F(OwnedSpaceTest, ASpaceTooSmallForAFileSystemStaysADirectoryAndSaysWhy) {
  auto a = freeze("echo ok > /out/ok", {"limits.owned_max_bytes=8388608"});
  auto c = run(a, "small");
  EXPECT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("small");
  EXPECT_EQ(r["owned_space"]["kind"], "directory");
  EXPECT_NE(r["owned_space"]["why_not"].get<std::string>().find("too small for a file system"),
            std::string::npos)
      << r["owned_space"].dump();
  expect_nothing_left("small");
}

TEST_F(OwnedSpaceTest, AnOrdinaryRunBuildsOnItsOwnFileSystem) {
  auto a = freeze("echo hi > /scratch/x && cp /scratch/x /out/x");
  auto c = run(a, "plain");
  EXPECT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("plain");
  EXPECT_EQ(r["state"], "built");
  EXPECT_EQ(r["owned_space"]["kind"], "filesystem");
  EXPECT_EQ(r["owned_space"]["size_bytes"], 8ULL << 30);
  EXPECT_EQ(r["owned_space"]["inodes"], 1048566u);
  auto v = sealrun({"receipt", "verify", receipt_path("plain")});
  EXPECT_EQ(v.status.code, 0) << v.out << v.err;
  expect_nothing_left("plain");
}

}  // namespace
}  // namespace sealrun::testing
