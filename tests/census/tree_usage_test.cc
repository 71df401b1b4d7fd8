#include "census/tree_usage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace sealrun::census {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(TreeUsage, CountsLogicalAndAllocatedBytesHardLinksOnce) {
  TempDir dir;
  std::filesystem::create_directories(dir / "a/b");
  write_text(dir / "a/b/f", std::string(100000, 'x'));
  ASSERT_EQ(::link((dir / "a/b/f").c_str(), (dir / "a/g").c_str()), 0);
  auto u = measure_tree(dir.str());
  ASSERT_TRUE(u.ok()) << u.error().message();
  EXPECT_TRUE(u->complete);
  EXPECT_EQ(u->paths, 5u);               // root, a, a/b, a/b/f, a/g
  EXPECT_EQ(u->logical_bytes, 200000u);  // both names count logically
  // Allocated: the file's blocks once (>= 100000, < 200000) plus directories.
  EXPECT_GE(u->allocated_bytes, 100000u);
  EXPECT_LT(u->allocated_bytes, 200000u);
}

TEST(TreeUsage, SymlinksAreNeverFollowed) {
  TempDir dir;
  write_text(dir / "f", "x");
  ASSERT_EQ(::symlink("/usr", (dir / "to-usr").c_str()), 0);
  ASSERT_EQ(::symlink(".", (dir / "loop").c_str()), 0);
  auto u = measure_tree(dir.str());
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->paths, 4u);
  EXPECT_LT(u->logical_bytes, 100u);
}

TEST(TreeUsage, BudgetCutsTheWalkShortAndSaysSo) {
  TempDir dir;
  for (int i = 0; i < 50; ++i) write_text(dir / ("f" + std::to_string(i)), "x");
  auto u = measure_tree(dir.str(), WalkBudget{.max_paths = 10, .max_ms = 10000});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->complete);
  EXPECT_LE(u->paths, 11u);
}

TEST(TreeUsage, MissingRootAndSymlinkRootAreErrors) {
  TempDir dir;
  EXPECT_FALSE(measure_tree(dir / "missing").ok());
  ASSERT_EQ(::symlink("/usr", (dir / "link").c_str()), 0);
  EXPECT_FALSE(measure_tree(dir / "link").ok());
}

TEST(FreeBytes, ReportsSomethingPlausible) {
  auto f = free_bytes_at("/");
  ASSERT_TRUE(f.ok());
  EXPECT_GT(*f, 0u);
}

}  // namespace
}  // namespace sealrun::census
