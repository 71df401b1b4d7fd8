// SPDX-License-Identifier: Apache-2.0
// OwnedFsTest: see ownedfs_fixture.h.
#include "tests/ownedfs/ownedfs_fixture.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "containment/ownedfs/loop_device.h"
#include "containment/ownedfs/mounts.h"
#include "containment/ownedfs/record.h"

namespace sealrun::ownedfs::testing {

void OwnedFsTest::SetUp() {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: loop devices and mounts";
  Availability a = probe_ownedfs();
  if (!a.available) GTEST_SKIP() << "no owned file system on this host: " << a.why;
  ::chmod(tmp_.str().c_str(), 0755);  // the job user reaches the mount point through it
  state_ = std::filesystem::canonical(tmp_.path()).string() + "/state";
  ASSERT_EQ(::mkdir(state_.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((state_ + "/owned").c_str(), 0711), 0);
}

void OwnedFsTest::TearDown() {
  if (state_.empty()) return;
  // Whatever a failed test left: lazily unmount, detach, unlink, never leaving a mount behind.
  auto dir = open_ownedfs_dir(state_, false);
  if (!dir) return;
  auto names = list_names(dir->get());
  if (!names) return;
  for (const auto& n : *names) {
    if (n.size() < 5 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
    auto r = read_record(dir->get(), n);
    if (!r) continue;
    for (int i = 0; i < 4; ++i)
      if (::umount2(r->mount_point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) break;
    if (!r->loop_device.empty()) {
      struct stat st {};
      auto b = loop_backing(r->loop_device);
      if (::stat(r->image.c_str(), &st) == 0 && b && *b && (*b)->ino == st.st_ino)
        (void)detach_loop(r->loop_device);
    }
    ::unlink(r->image.c_str());
  }
}

std::string OwnedFsTest::make_mount_point(const std::string& id) {
  std::string mp = state_ + "/owned/" + id;
  EXPECT_EQ(::mkdir(mp.c_str(), 0700), 0);
  int fd = ::open((mp + "/.sealrun-owned").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  EXPECT_GE(fd, 0);
  std::string text = id + "\n";
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  return mp;
}

OwnedFsSpec OwnedFsTest::spec(const std::string& id, uint64_t size_bytes, uint64_t inodes) {
  OwnedFsSpec s;
  s.state_dir = state_;
  s.id = id;
  s.mount_point = make_mount_point(id);
  s.size_bytes = size_bytes;
  s.inodes = inodes;
  s.owner_uid = kJobUid;
  s.owner_gid = kJobGid;
  s.marker_name = ".sealrun-owned";
  s.marker_text = id + "\n";
  return s;
}

bool OwnedFsTest::mounted(const std::string& mount_point) const {
  auto m = mount_at("/proc", mount_point);
  return m.ok() && m->has_value();
}

bool OwnedFsTest::exists(const std::string& path) const {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool OwnedFsTest::loop_bound(const std::string& loop_device) const {
  auto b = loop_backing(loop_device);
  return !b.ok() || b->has_value();
}

std::string OwnedFsTest::describe(const std::vector<Step>& steps) {
  std::string out;
  for (const auto& s : steps) out += s.what + ": " + s.outcome + (s.left ? " [LEFT]" : "") + "\n";
  return out;
}

void OwnedFsTest::expect_clean(const std::vector<Step>& steps) {
  EXPECT_FALSE(steps.empty());
  for (const auto& s : steps) EXPECT_FALSE(s.left) << describe(steps);
}

}  // namespace sealrun::ownedfs::testing
