// SPDX-License-Identifier: Apache-2.0
#include "census/tree_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "core/unique_fd.h"
#include "tests/census/walk_helpers.h"
#include "tests/support/temp_dir.h"

namespace sealrun::census {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;

TEST(TreeUsage, CountsLogicalAndAllocatedBytesHardLinksOnce) {
  TempDir dir;
  std::filesystem::create_directories(dir / "a/b");
  write_text(dir / "a/b/f", std::string(100000, 'x'));
  ASSERT_EQ(::link((dir / "a/b/f").c_str(), (dir / "a/g").c_str()), 0);
  auto u = measure_tree(dir.str());
  ASSERT_TRUE(u.ok()) << u.error().message();
  EXPECT_TRUE(u->measured()) << u->unmeasured_reason();
  EXPECT_EQ(u->paths, 5u);               // root, a, a/b, a/b/f, a/g
  EXPECT_EQ(u->inodes, 4u);              // the two names of f are one inode
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
  EXPECT_EQ(u->inodes, 4u);
  EXPECT_LT(u->logical_bytes, 100u);
}

TEST(TreeUsage, BudgetCutsTheWalkShortAndSaysSo) {
  TempDir dir;
  for (int i = 0; i < 500; ++i) write_text(dir / ("f" + std::to_string(i)), "x");
  auto u = measure_tree(dir.str(), WalkBudget{.max_paths = 100});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->complete);
  EXPECT_FALSE(u->measured());
  EXPECT_LE(u->paths, 100u + 64 * 2);  // budget checks come every 64 entries per walker
  EXPECT_NE(u->unmeasured_reason().find("max_paths 100"), std::string::npos)
      << u->unmeasured_reason();
}

TEST(TreeUsage, TooManyPendingDirectoriesCutTheWalkShort) {
  TempDir dir;
  for (int i = 0; i < 40; ++i) std::filesystem::create_directory(dir / ("d" + std::to_string(i)));
  auto u = measure_tree(dir.str(), WalkBudget{.max_pending_dirs = 10});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->complete);
  EXPECT_NE(u->cut_short.find("max_pending_dirs"), std::string::npos) << u->cut_short;
}

TEST(TreeUsage, MissingRootAndSymlinkRootAreErrors) {
  TempDir dir;
  EXPECT_FALSE(measure_tree(dir / "missing").ok());
  ASSERT_EQ(::symlink("/usr", (dir / "link").c_str()), 0);
  EXPECT_FALSE(measure_tree(dir / "link").ok());
}

// The same figures with one walker and with several, on a tree with a large directory (whose
// getdents chunks are shared between walkers), hard links across directories and symlinks.
TEST(TreeUsage, WalkersAgreeWhateverTheirNumber) {
  TempDir dir;
  std::filesystem::create_directories(dir / "big");
  std::filesystem::create_directories(dir / "x/y/z");
  uint64_t logical = 0;
  for (int i = 0; i < 6000; ++i) {
    std::string bytes(static_cast<size_t>(i % 300), 'b');
    write_text(dir / ("big/file-with-a-longish-name-" + std::to_string(i)), bytes);
    logical += bytes.size();
  }
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(::link((dir / ("big/file-with-a-longish-name-" + std::to_string(i))).c_str(),
                     (dir / ("x/y/z/l" + std::to_string(i))).c_str()),
              0);
    logical += static_cast<uint64_t>(i % 300);
    std::filesystem::create_directory(dir / ("x/y/d" + std::to_string(i)));
  }
  ASSERT_EQ(::symlink("big", (dir / "x/s").c_str()), 0);
  logical += 3;
  std::optional<TreeUsage> first;
  for (unsigned threads : {1u, 2u, 4u}) {
    auto u = measure_tree(dir.str(), WalkBudget{.threads = threads});
    ASSERT_TRUE(u.ok());
    EXPECT_TRUE(u->measured()) << u->unmeasured_reason();
    EXPECT_EQ(u->paths, 1u + 1 + 6000 + 3 + 50 + 50 + 1) << "threads " << threads;
    EXPECT_EQ(u->inodes, 1u + 1 + 6000 + 3 + 50 + 1);
    EXPECT_EQ(u->logical_bytes, logical);
    if (!first) {
      first = *u;
    } else {
      EXPECT_EQ(u->allocated_bytes, first->allocated_bytes) << "threads " << threads;
    }
  }
}

// Root reads everything, so the walker runs as nobody: a directory it cannot open and one whose
// entries it cannot stat are counted, named, and make the measurement a lower bound.
TEST(TreeUsage, WhatCannotBeReadIsReportedNotZero) {
  TempDir dir;
  ::chmod(dir.str().c_str(), 0755);
  std::filesystem::create_directories(dir / "tree/locked");
  std::filesystem::create_directories(dir / "tree/listonly");
  write_text(dir / "tree/locked/secret", std::string(5000, 's'));
  write_text(dir / "tree/listonly/hidden", std::string(5000, 'h'));
  write_text(dir / "tree/plain", "p");
  ::chmod((dir / "tree").c_str(), 0755);
  ::chmod((dir / "tree/locked").c_str(), 0);
  ::chmod((dir / "tree/listonly").c_str(), 0444);  // readable names, no search: stat fails
  std::string out = testing::run_unprivileged([&] {
    auto u = measure_tree(dir / "tree");
    if (!u) return "error " + u.error().message();
    return std::string(u->measured() ? "measured" : "unmeasured") + "|" +
           std::to_string(u->unreadable) + "|" + u->unmeasured_reason();
  });
  EXPECT_EQ(out.rfind("unmeasured|2|", 0), 0u) << out;
  EXPECT_NE(out.find("locked"), std::string::npos) << out;
  EXPECT_NE(out.find("hidden"), std::string::npos) << out;
}

// The job keeps writing while the census walks: entries vanish, directories are renamed and
// replaced. The walk copes (vanished entries skipped, moved directories counted as changed), never
// reports a read error for what merely changed, and never crashes or hangs.
TEST(TreeUsage, AWalkRacingAWriterCopes) {
  TempDir dir;
  for (int d = 0; d < 20; ++d) {
    std::filesystem::create_directories(dir / ("d" + std::to_string(d) + "/sub"));
    for (int f = 0; f < 50; ++f)
      write_text(dir / ("d" + std::to_string(d) + "/sub/f" + std::to_string(f)), "x");
  }
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      std::string d = dir / ("d" + std::to_string(i % 20));
      std::error_code ec;
      std::filesystem::rename(d + "/sub", d + "/moved", ec);
      std::filesystem::create_directories(d + "/sub", ec);
      write_text(d + "/sub/new" + std::to_string(i), "y");
      std::filesystem::remove_all(d + "/moved", ec);
    }
  });
  for (int i = 0; i < 30; ++i) {
    auto u = measure_tree(dir.str(), WalkBudget{.threads = 2, .max_open_fds = 8});
    ASSERT_TRUE(u.ok()) << u.error().message();
    EXPECT_EQ(u->unreadable, 0u) << u->unmeasured_reason();
    EXPECT_TRUE(u->complete);
    EXPECT_GE(u->paths, 21u);
  }
  stop = true;
  writer.join();
}

TEST(FreeBytes, ReportsSomethingPlausible) {
  auto f = free_bytes_at("/");
  ASSERT_TRUE(f.ok());
  EXPECT_GT(*f, 0u);
}

}  // namespace
}  // namespace sealrun::census
