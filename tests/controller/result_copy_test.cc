// SPDX-License-Identifier: Apache-2.0
// copy_result_tree() (controller/run/result_copy.h) on real directories: a device node — which a
// job on a nodev file system in a user namespace cannot make, but root copying a tree could
// recreate — is refused by name, and a regular file beside it is copied with its mode and times.
#include "controller/run/result_copy.h"

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

TEST(ResultCopy, AFloodOfEntriesIsCutShortPastTheBound) {
  testing::TempDir dir;
  fs::create_directories(dir / "from/a/b");
  fs::create_directories(dir / "to");
  for (int i = 0; i < 20; ++i)
    std::ofstream(fs::path(dir / "from/a/b") / ("f" + std::to_string(i)));
  auto a = open_at(AT_FDCWD, dir / "from", O_RDONLY | O_DIRECTORY);
  auto b = open_at(AT_FDCWD, dir / "to", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(a && b);
  CopyStats stats;
  ASSERT_TRUE(copy_result_tree(a->get(), b->get(), {}, &stats, 64, 6).ok());
  EXPECT_TRUE(stats.cut_short);
  EXPECT_EQ(stats.entries, 6u);  // a, a/b and four files: one past a bound of 5 is enough
  size_t made = 0;
  for (auto it = fs::recursive_directory_iterator(fs::path(dir / "to")); it != fs::end(it); ++it)
    ++made;
  EXPECT_EQ(made, 6u);
  // Under the bound, nothing is cut.
  testing::TempDir again;
  fs::create_directories(again / "to");
  auto c = open_at(AT_FDCWD, again / "to", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(c);
  CopyStats whole;
  ASSERT_TRUE(copy_result_tree(a->get(), c->get(), {}, &whole, 64, 22).ok());
  EXPECT_FALSE(whole.cut_short);
  EXPECT_EQ(whole.entries, 22u);
}

}  // namespace
}  // namespace sealrun::run
