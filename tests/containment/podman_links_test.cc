// SPDX-License-Identifier: Apache-2.0
// sweep_dangling_links() (containment/podman_storage.h) on a real link directory: a runroot link
// whose storage is gone and whose owned root is gone too is removed; one whose target cannot be
// seen but whose owned root is still there — a live run whose owned file system is mounted in its
// controller's own mount namespace — is kept. (Removing it made that run's podman recreate the
// path itself and its cleanup fail with "permission denied".)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "containment/podman_storage.h"
#include "tests/support/temp_dir.h"

namespace sealrun::podman {
namespace {

namespace fs = std::filesystem;

TEST(PodmanLinks, OwnedRootOfRunRoot) {
  EXPECT_EQ(owned_root_of_run_root("/s/owned/r1/podman/runroot"), "/s/owned/r1");
  EXPECT_FALSE(owned_root_of_run_root("/s/owned/r1/podman/graph").has_value());
  EXPECT_FALSE(owned_root_of_run_root("/podman/runroot").has_value());
}

TEST(PodmanLinks, ALiveRunsLinkIsKeptAndAGoneRunsRemoved) {
  testing::TempDir dir;
  const std::string links = dir / "links";
  ASSERT_EQ(::mkdir(links.c_str(), 0711), 0);
  // Live: the owned root (a mount point, empty from here) exists, its storage is not visible.
  const std::string live_owned = dir / "owned/live";
  fs::create_directories(live_owned);
  const std::string live = links + "/00000000000000aa";
  ASSERT_EQ(::symlink((live_owned + "/podman/runroot").c_str(), live.c_str()), 0);
  // Gone: neither the storage nor the owned root exists.
  const std::string gone = links + "/00000000000000bb";
  ASSERT_EQ(::symlink((dir / "owned/gone/podman/runroot").c_str(), gone.c_str()), 0);
  auto actions = sweep_dangling_links(links);
  struct stat st {};
  EXPECT_EQ(::lstat(live.c_str(), &st), 0) << "a live run's link was removed";
  EXPECT_NE(::lstat(gone.c_str(), &st), 0) << "a gone run's link was kept";
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_NE(actions[0].find("00000000000000bb"), std::string::npos) << actions[0];
}

}  // namespace
}  // namespace sealrun::podman
