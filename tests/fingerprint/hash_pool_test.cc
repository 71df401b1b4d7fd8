// SPDX-License-Identifier: Apache-2.0
// HashPool (tree_hash_pool.h) on its own: on a warm tree the hashing threads open every file
// themselves and the opening thread opens none; once a read misses the page cache (a tree whose
// pages were dropped), the opening thread opens files ahead; either way every file gets its
// bytes' digest. The threads start only once enough work waits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <deque>
#include <string>
#include <vector>

#include "core/hex.h"
#include "core/syscall.h"
#include "core/unique_fd.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree_hash_pool.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::TempDir;
using testing::write_text;

constexpr int kFiles = 600;

std::string content_of(int i) { return std::string(3000 + i, static_cast<char>('a' + i % 26)); }

struct Tree {
  TempDir dir;
  std::vector<std::string> names;
  Tree() {
    for (int i = 0; i < kFiles; ++i) {
      names.push_back("f" + std::to_string(i));
      write_text(dir / names.back(), content_of(i));
    }
  }
  // Writes the pages back and drops them from the page cache; false if some stayed.
  bool drop_from_page_cache() {
    for (const auto& n : names) {
      UniqueFd fd(::open((dir / n).c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd || ::fsync(fd.get()) != 0 ||
          ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED) != 0)
        return false;
    }
    // The first file must now miss: that is what makes the pool open ahead.
    UniqueFd fd(::open((dir / names[0]).c_str(), O_RDONLY | O_CLOEXEC));
    char byte;
    struct iovec iov {
      &byte, 1
    };
    return fd && ::preadv2(fd.get(), &iov, 1, 0, RWF_NOWAIT) == -1 && errno == EAGAIN;
  }
};

// Hashes every file of `tree` with two hashing threads; returns the pool's opened_ahead().
uint64_t hash_all(Tree& tree, std::deque<TreeEntry>& entries) {
  UniqueFd root(::open(tree.dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(root);
  const std::string display = tree.dir.str();
  HashPool pool(root.get(), display, 2);
  for (const auto& n : tree.names) {
    struct stat st {};
    EXPECT_EQ(::fstatat(root.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW), 0);
    TreeEntry& e = entries.emplace_back();
    e.path = n;
    pool.submit({&e, static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino});
  }
  pool.walk_finished();
  Status done = pool.finish([] {});
  EXPECT_TRUE(done.ok()) << done.error().message();
  EXPECT_EQ(pool.done_files(), static_cast<uint64_t>(kFiles));
  return pool.opened_ahead();
}

void expect_digests(const std::deque<TreeEntry>& entries) {
  ASSERT_EQ(entries.size(), static_cast<size_t>(kFiles));
  for (int i = 0; i < kFiles; ++i) {
    const std::string want = content_of(i);
    EXPECT_EQ(entries[i].bytes, want.size()) << i;
    EXPECT_EQ(to_hex(entries[i].sha256.data(), entries[i].sha256.size()), sha256_hex(want)) << i;
  }
}

TEST(HashPool, OnAWarmTreeTheHashingThreadsOpenEveryFileThemselves) {
  Tree tree;
  std::deque<TreeEntry> first, second;
  (void)hash_all(tree, first);  // whatever the cache held, now every page is in it
  EXPECT_EQ(hash_all(tree, second), 0u) << "the opening thread worked on a warm tree";
  expect_digests(second);
}

TEST(HashPool, OnceAReadMissesThePageCacheFilesAreOpenedAhead) {
  Tree tree;
  ASSERT_TRUE(tree.drop_from_page_cache()) << "cannot drop the tree's pages on this file system";
  std::deque<TreeEntry> entries;
  EXPECT_GT(hash_all(tree, entries), 0u) << "a cold tree was not opened ahead";
  expect_digests(entries);
}

// The threads of this process (tasks in /proc/self/task).
size_t thread_count() {
  UniqueFd dir(::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return dir ? list_dir_names(dir.get()).size() : 0;
}

// A pool starts its threads only once the work pays for them (issue 31): a tree verified through
// the digest cache submits nothing, a 20-file source or a job's few outputs little; such work is
// hashed by finish() on the caller's thread, with the same digests.
TEST(HashPool, ThreadsStartOnlyOnceEnoughIsQueued) {
  Tree tree;
  UniqueFd root(::open(tree.dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  const std::string display = tree.dir.str();
  std::deque<TreeEntry> entries;
  const size_t before = thread_count();
  HashPool pool(root.get(), display, 2);
  auto submit = [&](size_t i) {
    struct stat st {};
    ASSERT_EQ(::fstatat(root.get(), tree.names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW), 0);
    TreeEntry& e = entries.emplace_back();
    e.path = tree.names[i];
    pool.submit({&e, static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino});
  };
  EXPECT_EQ(thread_count(), before) << "threads started with nothing to hash";
  for (size_t i = 0; i + 1 < HashPool::kStartFiles; ++i) submit(i);
  EXPECT_EQ(thread_count(), before) << "threads started for a few small files";
  for (size_t i = HashPool::kStartFiles - 1; i < tree.names.size(); ++i) submit(i);
  EXPECT_EQ(thread_count(), before + 3) << "an opener and two hashing threads once enough waits";
  pool.walk_finished();
  Status done = pool.finish([] {});
  EXPECT_TRUE(done.ok()) << done.error().message();
  expect_digests(entries);
}

TEST(HashPool, AFewFilesAreHashedOnTheCallersThread) {
  Tree tree;
  UniqueFd root(::open(tree.dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  const std::string display = tree.dir.str();
  std::deque<TreeEntry> entries;
  const size_t before = thread_count();
  HashPool pool(root.get(), display, 2);
  for (int i = 0; i < 20; ++i) {
    struct stat st {};
    ASSERT_EQ(::fstatat(root.get(), tree.names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW), 0);
    TreeEntry& e = entries.emplace_back();
    e.path = tree.names[i];
    pool.submit({&e, static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino});
  }
  pool.walk_finished();
  EXPECT_EQ(thread_count(), before);
  Status done = pool.finish([] {});
  EXPECT_TRUE(done.ok()) << done.error().message();
  EXPECT_EQ(pool.done_files(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(to_hex(entries[i].sha256.data(), entries[i].sha256.size()), sha256_hex(content_of(i)))
        << i;
}

}  // namespace
}  // namespace sealrun
