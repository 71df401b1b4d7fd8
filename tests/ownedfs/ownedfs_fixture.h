// SPDX-License-Identifier: Apache-2.0
// The fixture of the owned file system's integration tests: a state directory in a fresh temporary
// directory, a mount point per run id, what the kernel says about mounts, loop devices and images,
// and a forceful cleanup for a test that failed half-way (so no mount or loop device outlives it).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <string>

#include "containment/ownedfs/ownedfs.h"
#include "tests/support/temp_dir.h"

namespace sealrun::ownedfs::testing {

inline constexpr uid_t kJobUid = 65534;  // nobody: the job user of these tests
inline constexpr gid_t kJobGid = 65534;

class OwnedFsTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // STATE/owned/<id>, made like claim_run_dirs makes it (0700, a marker).
  std::string make_mount_point(const std::string& id);
  OwnedFsSpec spec(const std::string& id, uint64_t size_bytes, uint64_t inodes);

  bool mounted(const std::string& mount_point) const;
  bool exists(const std::string& path) const;
  // Whether the loop device is bound to a file at all.
  bool loop_bound(const std::string& loop_device) const;
  // Fails the test with the step list when a step says something was left.
  static void expect_clean(const std::vector<Step>& steps);
  static std::string describe(const std::vector<Step>& steps);

  sealrun::testing::TempDir tmp_;
  std::string state_;
};

}  // namespace sealrun::ownedfs::testing
