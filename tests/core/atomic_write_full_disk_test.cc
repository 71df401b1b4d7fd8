// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 15 at the lowest level: a write that cannot complete because the disk is full (a
// 16 KiB tmpfs, mounted by the test: root only) leaves the previous file intact and no temporary.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>

#include "core/atomic_write.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

TEST(AtomicWrite, DiskFullLeavesPreviousFileIntact) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root (CI runs as root)";
  TempDir dir;
  std::string mnt = dir / "full";
  std::filesystem::create_directory(mnt);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16k"), 0) << "mount tmpfs";
  write_text(mnt + "/r.json", "previous");
  auto st = write_file_atomic(mnt + "/r.json", std::string(64 * 1024, 'x'));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(read_text(mnt + "/r.json"), "previous");
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(mnt)) ++entries;
  EXPECT_EQ(entries, 1u) << "no temporary file left behind";
  ::umount(mnt.c_str());
}

}  // namespace
}  // namespace sealrun
