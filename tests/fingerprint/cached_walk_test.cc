// SPDX-License-Identifier: Apache-2.0
// The walk through a digest cache that loads while the tree is being stat'ed (the cache is
// compared with the walked entries afterwards, tree_walk.h): the digest is the full hash's whatever
// the number of walking threads (and so whatever order entries are met in), with the cache
// vouching for every file or for all but a changed one; a directory swapped for a symlink is
// recorded as a symlink, never followed; a FIFO is an error naming it; a directory that vanishes
// while the walk is under way is an error naming it, with the cache present or not, and so is one
// replaced by another directory under the same name; a mount point
// inside the tree (whose d_ino is the covered directory's, not the mounted root's) is walked; a
// cache whose load ends part-way through the walk vouches for each file once.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "fingerprint/cached_tree.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/tree_walk.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::TempDir;
using testing::write_text;

constexpr int64_t kSecond = 1'000'000'000;

// 12 directories of 25 files each (two of them nested), so that two or more walking threads
// meet the entries in an order that differs from run to run.
std::string wide_tree(const TempDir& dir) {
  const std::string t = dir / "t";
  EXPECT_EQ(::mkdir(t.c_str(), 0755), 0);
  for (int d = 0; d < 12; ++d) {
    std::string sub = t + "/d" + std::to_string(d);
    if (d >= 10) sub = t + "/d0/n" + std::to_string(d);
    EXPECT_EQ(::mkdir(sub.c_str(), 0755), 0) << sub;
    for (int f = 0; f < 25; ++f)
      write_text(sub + "/f" + std::to_string(f), std::string(100 + d * 25 + f, 'a' + f % 26));
    EXPECT_EQ(::symlink("f0", (sub + "/link").c_str()), 0);
  }
  return t;
}

CachedTreeRequest request_for(const std::string& root, const std::string& state, unsigned threads) {
  CachedTreeRequest r;
  r.root = root;
  r.state_dir = state;
  r.tree.threads = threads;
  r.tree.stamp_clock = [] { return coarse_realtime_ns() + 2 * kSecond; };  // settled at once
  return r;
}

int64_t ctime_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return timespec_ns(st.st_ctim);
}

std::string full_digest(const std::string& root) {
  auto s = tree_digest(root);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? s->sha256 : "";
}

struct CachedWalk : ::testing::Test {
  void SetUp() override {
    root = wide_tree(dir);
    state = dir / "state";
    ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
    auto first = tree_digest_cached(request_for(root, state, 1));
    ASSERT_TRUE(first.ok()) << first.error().message();
    ASSERT_TRUE(first->pin_cache.stored);
    digest = first->summary.sha256;
  }
  TempDir dir;
  std::string root, state, digest;
};

TEST_F(CachedWalk, SameDigestWhateverTheThreadCount) {
  ASSERT_EQ(digest, full_digest(root));
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    auto again = tree_digest_cached(request_for(root, state, threads));
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(again->summary.sha256, digest) << threads << " threads";
    EXPECT_EQ(again->pin_cache.status, PinCacheStatus::kHit) << threads;
    EXPECT_EQ(again->pin_cache.checked_by_stat, 300u) << threads;
    EXPECT_TRUE(again->pin_cache.digest_from_cache) << threads;
  }
  // One file changed: that one is hashed, the rest vouched for, and the digest is the full one.
  write_text(root + "/d3/f7", "changed, and of another size");
  auto changed = tree_digest_cached(request_for(root, state, 2));
  ASSERT_TRUE(changed.ok()) << changed.error().message();
  EXPECT_EQ(changed->summary.sha256, full_digest(root));
  EXPECT_NE(changed->summary.sha256, digest);
  EXPECT_EQ(changed->pin_cache.status, PinCacheStatus::kPartial);
  EXPECT_EQ(changed->pin_cache.rehashed, 1u);
  EXPECT_EQ(changed->pin_cache.checked_by_stat, 299u);
  EXPECT_FALSE(changed->pin_cache.digest_from_cache);
  EXPECT_TRUE(changed->pin_cache.stored);
  // The cache now describes the changed tree, whichever order it is walked in.
  for (unsigned threads : {1u, 8u}) {
    auto again = tree_digest_cached(request_for(root, state, threads));
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(again->summary.sha256, changed->summary.sha256) << threads;
    EXPECT_TRUE(again->pin_cache.digest_from_cache) << threads;
  }
}

// The cache finishes loading part-way through the walk: each walking thread compares the
// directories it reads from then on at once, and the entries it added before are compared after
// the walk. Whenever the load ends (before the first directory, after some, never during the
// walk), every file is vouched for exactly once, or hashed when it changed, and the digest is the
// full hash's.
TEST_F(CachedWalk, ACacheThatLoadsMidWalkVouchesForEachFileOnce) {
  LoadedDigestCache loaded = load_digest_cache(state, root);
  ASSERT_EQ(loaded.state, LoadedDigestCache::State::kLoaded) << loaded.reason;
  auto walk_with_load_after = [&](int ready_after_calls, unsigned threads) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    AwaitDigestCache await;
    await.ready = [&, calls]() -> const DigestCacheContent* {
      return ++*calls > ready_after_calls ? &loaded.content : nullptr;
    };
    await.wait = [&] { return &loaded.content; };
    TreeOptions options = request_for(root, state, threads).tree;
    auto walked = tree_digest_keeping_walk(root, options, nullptr, await);
    EXPECT_TRUE(walked.ok()) << walked.error().message();
    return walked.ok() ? std::move(*walked) : DigestedTree{};
  };
  for (unsigned threads : {1u, 2u}) {
    for (int after : {0, 1, 4, 9, 1000}) {
      DigestedTree d = walk_with_load_after(after, threads);
      EXPECT_EQ(d.summary.sha256, digest) << threads << " threads, loaded after " << after;
      EXPECT_EQ(d.tree.files_from_cache, 300u) << threads << " threads, loaded after " << after;
      EXPECT_EQ(d.tree.files, 300u) << threads << " threads, loaded after " << after;
      EXPECT_TRUE(d.tree.unchanged) << threads << " threads, loaded after " << after;
    }
  }
  // A file changed in a directory met early (d0) and one met late (d9): both hashed, whichever
  // side of the load's end their directories were read on.
  write_text(root + "/d0/f1", "changed early");
  write_text(root + "/d9/f2", "changed late, and longer");
  const std::string full = full_digest(root);
  for (unsigned threads : {1u, 2u}) {
    for (int after : {0, 2, 6, 1000}) {
      DigestedTree d = walk_with_load_after(after, threads);
      EXPECT_EQ(d.summary.sha256, full) << threads << " threads, loaded after " << after;
      EXPECT_EQ(d.tree.files_from_cache, 298u) << threads << " threads, loaded after " << after;
      EXPECT_FALSE(d.tree.unchanged) << threads << " threads, loaded after " << after;
    }
  }
}

// A directory whose stamp holds is not listed again: its children are the cache's. That is only
// right if the cache holds every child, so a directory with a child that was not stored (hashed
// in the second of its last change, so not trusted later) is stored as not listed, and the next
// walk reads its listing and finds that child.
TEST(CachedListing, ADirectoryWithAChildNotStoredIsListedAgain) {
  TempDir dir;
  const std::string root = dir / "t";
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/d").c_str(), 0755), 0);
  write_text(root + "/d/a", "a");
  write_text(root + "/d/b", "b");
  const std::string state = dir / "state";
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  // d/b changes in a later second than d did (its content, not d's names: d's ctime stays).
  const int64_t made = ctime_of(root + "/d");
  while (coarse_realtime_ns() / kSecond <= made / kSecond)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_text(root + "/d/b", "b, changed");
  const int64_t changed = ctime_of(root + "/d/b");
  ASSERT_GT(changed / kSecond, made / kSecond);

  // Hashed in the second of d/b's change: d/b is not stored, d (settled) is, but not listed.
  CachedTreeRequest racy = request_for(root, state, 1);
  racy.tree.stamp_clock = [changed] { return changed; };
  auto first = tree_digest_cached(racy);
  ASSERT_TRUE(first.ok()) << first.error().message();
  {
    LoadedDigestCache c = load_digest_cache(state, root);
    ASSERT_EQ(c.state, LoadedDigestCache::State::kLoaded) << c.reason;
    ASSERT_NE(c.content.find("d"), nullptr);
    EXPECT_EQ(c.content.find("d/b"), nullptr);
    EXPECT_TRUE(c.content.children(*c.content.find("d")).empty());
  }
  // Later: d's stamp holds; its listing is read, d/b found (and hashed), the digest the full one.
  for (unsigned threads : {1u, 2u}) {
    auto later = tree_digest_cached(request_for(root, state, threads));
    ASSERT_TRUE(later.ok()) << later.error().message();
    EXPECT_EQ(later->summary.sha256, full_digest(root)) << threads;
    EXPECT_EQ(later->summary.entries, 4u) << threads;
  }
  // Now every child is stored: d is listed, and a walk that takes its listing from the cache
  // still finds both files and the full digest.
  LoadedDigestCache c = load_digest_cache(state, root);
  ASSERT_EQ(c.state, LoadedDigestCache::State::kLoaded) << c.reason;
  EXPECT_EQ(c.content.children(*c.content.find("d")).size(), 2u);
  auto listed = tree_digest_cached(request_for(root, state, 2));
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  EXPECT_EQ(listed->summary.sha256, full_digest(root));
  EXPECT_TRUE(listed->pin_cache.digest_from_cache);
  // A name added to d changes its ctime: the listing is read again and the new file found.
  write_text(root + "/d/c", "c");
  auto added = tree_digest_cached(request_for(root, state, 2));
  ASSERT_TRUE(added.ok()) << added.error().message();
  EXPECT_EQ(added->summary.sha256, full_digest(root));
  EXPECT_EQ(added->summary.entries, 5u);
}

TEST_F(CachedWalk, DirectorySwappedForASymlinkIsRecordedNotFollowed) {
  // The same names and bytes elsewhere, so that following the symlink would give the old digest.
  std::filesystem::rename(root + "/d5", dir / "d5-moved");
  ASSERT_EQ(::symlink((dir / "d5-moved").c_str(), (root + "/d5").c_str()), 0);
  auto swapped = tree_digest_cached(request_for(root, state, 2));
  ASSERT_TRUE(swapped.ok()) << swapped.error().message();
  EXPECT_NE(swapped->summary.sha256, digest);
  EXPECT_EQ(swapped->summary.sha256, full_digest(root));
  EXPECT_EQ(swapped->summary.entries, 1u + 12 + 12 * 26 - 26);  // d5 is a symlink: its 26 are gone
}

TEST_F(CachedWalk, AFifoIsAnErrorNamingIt) {
  ASSERT_EQ(::mkfifo((root + "/d2/pipe").c_str(), 0644), 0);
  auto r = tree_digest_cached(request_for(root, state, 2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(root + "/d2/pipe is a FIFO"), std::string::npos)
      << r.error().message();
}

// The stamp clock is read once before the root and once before each directory is opened (with one
// walking thread, one directory at a time): on the third reading, the first subdirectory is about
// to be opened, and every top-level subdirectory is removed under the walk's feet.
void vanishing_mid_walk(const std::string& root, const std::string& state) {
  auto request = request_for(root, state, 1);
  auto calls = std::make_shared<std::atomic<int>>(0);
  request.tree.stamp_clock = [calls, root] {
    if (++*calls == 3)
      for (int d = 0; d < 10; ++d) std::filesystem::remove_all(root + "/d" + std::to_string(d));
    return coarse_realtime_ns() + 2 * kSecond;
  };
  auto r = tree_digest_cached(request);
  ASSERT_FALSE(r.ok()) << "a walk that lost directories must not give a digest";
  EXPECT_NE(r.error().message().find("open directory " + root + "/d"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("did the tree change?"), std::string::npos);
}

// The same moment, but every top-level subdirectory is renamed away and a new, empty one made
// under its name: what the walk opens is not what the listing named, and that is an error, not a
// silent detour into the new directory (its d_ino, or its parent's lstat, was the old one's).
TEST_F(CachedWalk, DirectoryReplacedMidWalkIsAnError) {
  auto request = request_for(root, state, 1);
  auto calls = std::make_shared<std::atomic<int>>(0);
  const std::string away = dir / "away";
  ASSERT_EQ(::mkdir(away.c_str(), 0755), 0);
  request.tree.stamp_clock = [calls, root = root, away] {
    if (++*calls == 3)
      for (int d = 0; d < 10; ++d) {
        const std::string name = "/d" + std::to_string(d);
        std::filesystem::rename(root + name, away + name);
        std::filesystem::create_directory(root + name);
      }
    return coarse_realtime_ns() + 2 * kSecond;
  };
  auto r = tree_digest_cached(request);
  ASSERT_FALSE(r.ok()) << "a walk that met a replaced directory must not give a digest";
  EXPECT_NE(r.error().message().find("was replaced during the walk"), std::string::npos)
      << r.error().message();
}

TEST_F(CachedWalk, DirectoryVanishingMidWalkIsAnErrorNamingItWithTheCache) {
  ASSERT_TRUE(std::filesystem::exists(digest_cache_path(state, root)));
  vanishing_mid_walk(root, state);
}

TEST_F(CachedWalk, DirectoryVanishingMidWalkIsAnErrorNamingItWithoutACache) {
  vanishing_mid_walk(root, "");  // no state directory: no cache, files hashed as found
}

// A directory the listing names is not stat'ed by its parent; its identity is checked against
// d_ino, which for a mount point is the covered directory's. The walk must still enter it (the
// lstat then confirms what was opened) and record the mounted root's mode.
TEST_F(CachedWalk, AMountPointInsideTheTreeIsWalked) {
  const std::string mnt = root + "/d4";
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m,mode=0711"), 0) << mnt;
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};
  write_text(mnt + "/on-tmpfs", "x");
  const std::string full = full_digest(root);
  EXPECT_NE(full, digest);
  for (unsigned threads : {1u, 2u}) {
    auto r = tree_digest_cached(request_for(root, state, threads));
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->summary.sha256, full) << threads;
    EXPECT_EQ(r->summary.entries, 1u + 12 + 12 * 26 - 26 + 1) << threads;  // d4 holds one file
  }
}

}  // namespace
}  // namespace sealrun
