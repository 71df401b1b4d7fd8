// SPDX-License-Identifier: Apache-2.0
// PinImageMounts (containment/podman_pins.h) with real erofs images and real mounts, as root:
// attached only in a private mount namespace, read-only at <owned_root>/pins/<n>, the spec podman
// is given pointing there (a tree's source, a closure file's host path), one mount per image,
// invisible from the host's namespace, and gone (directories too) after detach(); outside a
// private namespace refused with nothing made.
#include "containment/podman_pins.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "containment/ownedfs/private_ns.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// An erofs image of `dir`, opened read-only.
int erofs_of(const std::string& dir, const std::string& image) {
  std::string cmd = "mkfs.erofs --quiet " + image + " " + dir + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  int fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << image;
  return fd;
}

class PodmanPins : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounts file systems: root (CI is root)";
    owned_ = (dir_.path() / "owned").string();
    fs::create_directories(owned_);
    write(dir_.path() / "tree/a.txt", "tree\n");
    write(dir_.path() / "closure/lib/c.txt", "closure\n");
    tree_fd_ = erofs_of(dir_.path() / "tree", dir_.path() / "tree.erofs");
    closure_fd_ = erofs_of(dir_.path() / "closure", dir_.path() / "closure.erofs");
    spec_.run_id = "podman-pins-test";
    spec_.owned_root = owned_;
    MountSpec tree{dir_.path() / "tree", "/opt/data", MountSpec::Access::kReadOnly, ViewKind::kTree,
                   "sha256:x"};
    tree.image_fd = tree_fd_;
    MountSpec again = tree;  // the same image twice: mounted once
    again.target = "/opt/again";
    MountSpec out{owned_ + "/out", "/out", MountSpec::Access::kWritable, ViewKind::kOut, ""};
    spec_.mounts = {tree, again, out};
    spec_.files_and_links.push_back(
        {"/lib/c.txt", ViewKind::kClosure, "/lib/c.txt", "sha256:y", false, {}, -1});
    spec_.closure_image_fd = closure_fd_;
  }
  void TearDown() override {
    if (tree_fd_ >= 0) ::close(tree_fd_);
    if (closure_fd_ >= 0) ::close(closure_fd_);
  }

  TempDir dir_;
  std::string owned_;
  int tree_fd_ = -1, closure_fd_ = -1;
  ContainmentSpec spec_;
};

TEST_F(PodmanPins, AttachedReadOnlyInAPrivateNamespaceOnlyAndGoneAfterDetach) {
  const std::string pins = owned_ + "/pins";
  std::string host_table_during;
  // A thread of its own: the private namespace is per thread (private_ns.h).
  std::thread t([&] {
    ASSERT_TRUE(ownedfs::enter_private_mount_namespace().ok());
    podman::PinImageMounts mounts;
    std::vector<std::string> actions;
    auto served = mounts.attach(spec_, actions);
    ASSERT_TRUE(served.ok()) << served.error().message();
    EXPECT_EQ(served->mounts[0].source, pins + "/0");
    EXPECT_EQ(served->mounts[1].source, pins + "/0");  // one mount per image
    EXPECT_EQ(served->mounts[2].source, owned_ + "/out");
    EXPECT_EQ(served->files_and_links[0].host_path, pins + "/1/lib/c.txt");
    EXPECT_EQ(served->files_and_links[0].job_path, "/lib/c.txt");
    EXPECT_EQ(slurp(pins + "/0/a.txt"), "tree\n");
    EXPECT_EQ(slurp(pins + "/1/lib/c.txt"), "closure\n");
    EXPECT_EQ(actions.size(), 2u);
    // Read-only, nosuid, nodev as this namespace lists it.
    std::string mine = slurp("/proc/thread-self/mountinfo");
    for (const char* n : {"/0 ", "/1 "}) {
      size_t at = mine.find(" " + pins + n);
      ASSERT_NE(at, std::string::npos) << mine;
      std::string line = mine.substr(at, mine.find('\n', at) - at);
      EXPECT_NE(line.find(" ro,nosuid,nodev"), std::string::npos) << line;
      EXPECT_NE(line.find(" - erofs "), std::string::npos) << line;
    }
    int w = ::open((pins + "/0/new").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_LT(w, 0);
    EXPECT_EQ(errno, EROFS);
    host_table_during = slurp("/proc/1/mountinfo");
    ASSERT_TRUE(mounts.detach(actions).ok());
    EXPECT_FALSE(fs::exists(pins));
    EXPECT_EQ(slurp("/proc/thread-self/mountinfo").find(pins), std::string::npos);
  });
  t.join();
  EXPECT_EQ(host_table_during.find(pins), std::string::npos) << host_table_during;
}

TEST_F(PodmanPins, RefusedInTheHostsNamespaceWithNothingMade) {
  ASSERT_FALSE(ownedfs::in_private_mount_namespace());
  podman::PinImageMounts mounts;
  std::vector<std::string> actions;
  auto served = mounts.attach(spec_, actions);
  ASSERT_FALSE(served.ok());
  EXPECT_NE(served.error().message().find("private mount namespace"), std::string::npos);
  EXPECT_FALSE(fs::exists(owned_ + "/pins"));
  EXPECT_TRUE(actions.empty());
}

TEST_F(PodmanPins, NothingToServeLeavesTheSpecAsItIs) {
  spec_.mounts[0].image_fd = spec_.mounts[1].image_fd = -1;
  spec_.closure_image_fd = -1;
  podman::PinImageMounts mounts;
  std::vector<std::string> actions;
  auto served = mounts.attach(spec_, actions);  // even here, in the host's namespace
  ASSERT_TRUE(served.ok()) << served.error().message();
  EXPECT_EQ(served->mounts[0].source, spec_.mounts[0].source);
  EXPECT_EQ(served->files_and_links[0].host_path, "/lib/c.txt");
  EXPECT_FALSE(fs::exists(owned_ + "/pins"));
}

}  // namespace
}  // namespace sealrun::testing
