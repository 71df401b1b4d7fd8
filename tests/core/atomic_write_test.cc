// SPDX-License-Identifier: Apache-2.0
#include "core/atomic_write.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/unique_fd.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

size_t entries_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicWrite, CreatesAndReplaces) {
  TempDir dir;
  ASSERT_TRUE(write_file_atomic(dir / "r.json", "one", 0600).ok());
  EXPECT_EQ(read_text(dir / "r.json"), "one");
  ASSERT_TRUE(write_file_atomic(dir / "r.json", "two").ok());
  EXPECT_EQ(read_text(dir / "r.json"), "two");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries_in(dir.str()), 1u);  // no temporary left behind
}

// DirSync::kLater skips only the directory's fsync: the file is replaced as atomically, with its
// mode, and no temporary is left.
TEST(AtomicWrite, DirSyncLaterStillReplacesAtomically) {
  TempDir dir;
  UniqueFd dirfd(::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dirfd);
  ASSERT_TRUE(write_file_atomic_in(dirfd.get(), "r.json", "one", 0600, "r", DirSync::kLater).ok());
  ASSERT_TRUE(write_file_atomic_in(dirfd.get(), "r.json", "two", 0640, "r", DirSync::kLater).ok());
  EXPECT_EQ(read_text(dir / "r.json"), "two");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(entries_in(dir.str()), 1u);
  EXPECT_FALSE(write_file_atomic_in(dirfd.get(), "a/b", "x", 0600, "a/b", DirSync::kLater).ok());
}

// The volatile write (no fsync at all) is as atomic for readers: the new complete file replaces
// the old one, with its mode, and no temporary is left; a bad name is refused.
TEST(AtomicWrite, AVolatileWriteStillReplacesAtomically) {
  TempDir dir;
  UniqueFd dirfd(::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dirfd);
  ASSERT_TRUE(write_file_volatile_in(dirfd.get(), "r.live", "one", 0600, "r").ok());
  ASSERT_TRUE(write_file_volatile_in(dirfd.get(), "r.live", "two", 0640, "r").ok());
  EXPECT_EQ(read_text(dir / "r.live"), "two");
  struct stat st {};
  ASSERT_EQ(::stat((dir / "r.live").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(entries_in(dir.str()), 1u);
  EXPECT_FALSE(write_file_volatile_in(dirfd.get(), "..", "x", 0600, "..").ok());
}

// The temporaries a killed writer leaves (".<target>.tmp-<pid>-<random>") are told by name, with
// their writer's pid, for sweeps; nothing else is taken for one.
TEST(AtomicWrite, ATemporaryIsToldByNameWithItsWriter) {
  EXPECT_EQ(atomic_write_temporary_writer(".r.json.tmp-4242-0000abcd"), 4242);
  EXPECT_EQ(atomic_write_temporary_writer(".a.tmp-b.json.tmp-17-ffffffff"), 17);  // the last mark
  EXPECT_EQ(atomic_write_temporary_writer(".k.data.tmp-999999999-0000abcd"), 999999999);
  for (const char* not_one :
       {"r.json", "r.json.tmp-1-2", ".r.json", ".r.json.tmp-x-1", ".r.json.tmp-12",
        ".r.json.tmp--1", ".r.json.tmp-1234567890-1", "a/.r.json.tmp-1-2", ".tmp-1-2"})
    EXPECT_EQ(atomic_write_temporary_writer(not_one), std::nullopt) << not_one;
}

// A write that fails (the disk is full) leaves the previous file: atomic_write_full_disk_test.cc.

}  // namespace
}  // namespace sealrun
