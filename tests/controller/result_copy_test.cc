// SPDX-License-Identifier: Apache-2.0
// copy_result_tree() (controller/result_copy.h) on real directories: a device node — which a job on
// a nodev file system in a user namespace cannot make, but root copying a tree could recreate — is
// refused by name, and a regular file beside it is copied with its mode and times.
#include "controller/result_copy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun::run {
namespace {

namespace fs = std::filesystem;

Status copy(const std::string& from, const std::string& to) {
  auto a = open_at(AT_FDCWD, from, O_RDONLY | O_DIRECTORY);
  auto b = open_at(AT_FDCWD, to, O_RDONLY | O_DIRECTORY);
  if (!a || !b) return Error::make("open");
  CopyStats stats;
  return copy_result_tree(a->get(), b->get(), {}, &stats);
}

TEST(ResultCopy, ADeviceNodeIsRefusedByName) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod of a device needs root";
  testing::TempDir dir;
  fs::create_directories(dir / "from/sub");
  fs::create_directories(dir / "to");
  ASSERT_EQ(::mknod((dir / "from/sub/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  Status st = copy(dir / "from", dir / "to");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("sub/null is a device node"), std::string::npos)
      << st.error().message();
  struct stat made {};
  EXPECT_NE(::lstat((dir / "to/sub/null").c_str(), &made), 0);  // nothing of it was made
}

TEST(ResultCopy, AFileKeepsItsModeAndTimes) {
  testing::TempDir dir;
  fs::create_directories(dir / "from");
  fs::create_directories(dir / "to");
  { std::ofstream(dir / "from/f") << "bytes\n"; }
  ASSERT_EQ(::chmod((dir / "from/f").c_str(), 0751), 0);
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 5}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir / "from/f").c_str(), times, 0), 0);
  ASSERT_TRUE(copy(dir / "from", dir / "to").ok());
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "to/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1000000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 5);
  EXPECT_EQ(st.st_size, 6);
}

}  // namespace
}  // namespace sealrun::run
