#include "core/atomic_write.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

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

TEST(AtomicWrite, FailureLeavesPreviousFileIntact) {
  TempDir dir;
  write_text(dir / "r.json", "previous");
  ASSERT_EQ(::chmod(dir.str().c_str(), 0500), 0);
  if (::geteuid() == 0) {
    // Root ignores directory permissions; use a full tmpfs instead (ACCEPTANCE 15: disk full).
    ASSERT_EQ(::chmod(dir.str().c_str(), 0700), 0);
    std::string mnt = dir / "full";
    std::filesystem::create_directory(mnt);
    ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16k"), 0) << "mount tmpfs";
    write_text(mnt + "/r.json", "previous");
    auto st = write_file_atomic(mnt + "/r.json", std::string(64 * 1024, 'x'));
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(read_text(mnt + "/r.json"), "previous");
    EXPECT_EQ(entries_in(mnt), 1u);
    ::umount(mnt.c_str());
    return;
  }
  auto st = write_file_atomic(dir / "r.json", "new");
  ::chmod(dir.str().c_str(), 0700);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(read_text(dir / "r.json"), "previous");
}

}  // namespace
}  // namespace sealrun
