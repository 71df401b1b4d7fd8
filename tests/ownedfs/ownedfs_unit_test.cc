// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include "containment/ownedfs/ownedfs.h"
#include "containment/ownedfs/record.h"
#include "tests/support/temp_dir.h"

namespace sealrun::ownedfs {
namespace {

TEST(OwnedFsRecord, RoundTripsAndRefusesWhatItDoesNotKnow) {
  Record r{"run-1",      1234,     "5678", "/s/ownedfs/run-1.img",    "/s/owned/run-1",
           "/dev/loop3", 64 << 20, 1000,   "2026-11-30T00:00:00.000Z"};
  auto back = record_from_json(record_to_json(r));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->id, "run-1");
  EXPECT_EQ(back->controller_pid, 1234);
  EXPECT_EQ(back->loop_device, "/dev/loop3");
  EXPECT_EQ(back->inodes, 1000u);
  std::string text = record_to_json(r);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"run-1\"", "\"../x\""},                              // an id that is a path
           {"sealrun-ownedfs-v1", "sealrun-ownedfs-v0"},           // another schema
           {"\"controller_pid\": 1234", "\"controller_pid\": 0"},  // no controller
           {"\"inodes\": 1000", "\"inodes\": -1"},
       }) {
    std::string bad = text;
    auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    EXPECT_FALSE(record_from_json(bad).ok()) << to;
  }
  EXPECT_FALSE(record_from_json(text + text).ok());  // two documents
}

TEST(OwnedFsShape, SizesAndInodeCountsThatExt4CannotHoldAreNamed) {
  EXPECT_EQ(unfit_shape(64ULL << 20, 1000), "");
  EXPECT_EQ(unfit_shape(8ULL << 30, default_owned_max_inodes(8ULL << 30)), "");
  EXPECT_NE(unfit_shape(1 << 20, 100).find("too small"), std::string::npos);
  EXPECT_NE(unfit_shape(64ULL << 20, 64ULL << 20).find("at most"), std::string::npos);
  EXPECT_NE(unfit_shape(64ULL << 20, 0), "");
  // About one per 8 KiB, rounded down to whole inode-table blocks (16 inodes) in every 128 MiB
  // block group, less ext4's 10 reserved inodes.
  EXPECT_EQ(default_owned_max_inodes(8ULL << 30), 1048566u);
  EXPECT_EQ(default_owned_max_inodes(1ULL << 30), 131062u);
  EXPECT_EQ(default_owned_max_inodes(16ULL << 20), 2038u);
  EXPECT_EQ(default_owned_max_inodes(1 << 20), 1014u);
  for (uint64_t size : {100ULL << 20, 3ULL << 30, 10ULL << 30, 100ULL << 30}) {
    uint64_t groups = (size / 4096 + 32767) / 32768;
    uint64_t d = default_owned_max_inodes(size);
    EXPECT_EQ((d + 10) % (16 * groups), 0u) << size;
    EXPECT_LE(d, size / 8192) << size;
    EXPECT_GT(d + 16 * groups, size / 8192) << size;
    EXPECT_EQ(unfit_shape(size, d), "") << size;
  }
}

// The probe's seam: a host without loop devices is reported as such, with the reason.
TEST(OwnedFsProbe, NoLoopControlMeansUnavailableWithTheReason) {
  testing::TempDir empty;
  Host host;
  host.dev_dir = empty.str();
  Availability a = probe_ownedfs(host);
  EXPECT_FALSE(a.available);
  if (::geteuid() == 0)
    EXPECT_NE(a.why.find("loop-control"), std::string::npos) << a.why;
  else
    EXPECT_NE(a.why.find("not root"), std::string::npos) << a.why;
}

}  // namespace
}  // namespace sealrun::ownedfs
