// The verified digest cache on real trees: an unchanged tree is verified by stat alone, with the
// digest a full hash gives on every entry kind; changes that keep size and mtime (rewritten in
// place with the mtime restored, swapped by rename, a new file on a reused inode) are caught; an
// entry inside the racy window is re-hashed; a corrupted, foreign-owned or group-writable cache is
// ignored and said so; --rehash bypasses it; a cached digest never decides a failure.
//
// Stamps are taken with a clock two seconds ahead (TreeOptions::stamp_clock), so the files these
// tests just wrote count as settled without waiting for the next second; tests of the rule itself
// forge the cache instead.
#include "fingerprint/cached_tree.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "fingerprint/digest_cache.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

constexpr int64_t kSecond = 1'000'000'000;

void make_file(const std::string& path, const std::string& bytes, mode_t mode = 0644) {
  write_text(path, bytes);
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

// Every kind semantic-tree-v1 records: directories (nested, odd modes), empty, small and mapped
// (>= 1 MiB) files, a setuid file, symlinks (relative, dangling, a loop), a non-UTF-8 name.
std::string rich_tree(const TempDir& dir) {
  const std::string t = dir / "t";
  EXPECT_EQ(::mkdir(t.c_str(), 0755), 0);
  EXPECT_EQ(::mkdir((t + "/sub").c_str(), 0750), 0);
  EXPECT_EQ(::mkdir((t + "/sub/deeper").c_str(), 0700), 0);
  make_file(t + "/empty", "");
  make_file(t + "/hello.txt", "hello\n");
  make_file(t + "/run.sh", "#!/bin/sh\n", 04755);
  make_file(t + "/sub/big.bin", std::string(3 << 20, 'b') + "end");
  make_file(t + "/sub/deeper/notes", std::string(70000, 'n'));
  make_file(t + "/caf\xff", "not utf-8");
  EXPECT_EQ(::symlink("hello.txt", (t + "/link").c_str()), 0);
  EXPECT_EQ(::symlink("nowhere", (t + "/dangling").c_str()), 0);
  EXPECT_EQ(::symlink("loop", (t + "/loop").c_str()), 0);
  return t;
}

CachedTreeRequest request_for(const std::string& root, const std::string& state) {
  CachedTreeRequest r;
  r.root = root;
  r.state_dir = state;
  r.tree.stamp_clock = [] { return coarse_realtime_ns() + 2 * kSecond; };
  return r;
}

std::string full_digest(const std::string& root) {
  auto s = tree_digest(root);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return s.ok() ? s->sha256 : "";
}

CachedTreeResult verify(const CachedTreeRequest& r) {
  auto result = tree_digest_cached(r);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? *result : CachedTreeResult{};
}

struct CacheFixture : ::testing::Test {
  void SetUp() override {
    root = rich_tree(dir);
    state = dir / "state";
    ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
    first = verify(request_for(root, state));
  }
  std::string cache_file() const { return digest_cache_path(state, root); }
  TempDir dir;
  std::string root, state;
  CachedTreeResult first;
};

TEST_F(CacheFixture, FirstUseIsAMissAndStoresARootOnlyCache) {
  EXPECT_EQ(first.pin_cache.status, PinCacheStatus::kMiss);
  EXPECT_EQ(first.pin_cache.files, 6u);
  EXPECT_EQ(first.pin_cache.rehashed, 6u);
  EXPECT_EQ(first.pin_cache.checked_by_stat, 0u);
  EXPECT_TRUE(first.pin_cache.stored);
  EXPECT_EQ(first.summary.sha256, full_digest(root));
  struct stat st {};
  ASSERT_EQ(::stat(cache_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat((state + "/cache/digests").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((state + "/cache").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(CacheFixture, UnchangedTreeIsVerifiedByStatAloneWithTheFullDigest) {
  const auto before = std::filesystem::last_write_time(cache_file());
  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kHit);
  EXPECT_EQ(again.pin_cache.checked_by_stat, 6u);
  EXPECT_EQ(again.pin_cache.rehashed, 0u);
  EXPECT_TRUE(again.pin_cache.digest_from_cache);
  EXPECT_FALSE(again.pin_cache.stored) << "an unchanged tree rewrites nothing";
  EXPECT_EQ(std::filesystem::last_write_time(cache_file()), before);
  EXPECT_EQ(again.summary.sha256, first.summary.sha256);
  EXPECT_EQ(again.summary.sha256, full_digest(root));
  EXPECT_EQ(again.summary.entries, first.summary.entries);

  // Metadata is never taken from the cache: a chmod moves the digest.
  ASSERT_EQ(::chmod((root + "/hello.txt").c_str(), 0600), 0);
  auto chmodded = verify(request_for(root, state));
  EXPECT_NE(chmodded.summary.sha256, first.summary.sha256);
  EXPECT_EQ(chmodded.summary.sha256, full_digest(root));
  EXPECT_FALSE(chmodded.pin_cache.digest_from_cache);
}

// Changes that leave every file's content alone must still move the digest: the tree's digest
// is taken from the cache only when every record is vouched for and no entry is new or gone.
TEST_F(CacheFixture, EveryStructuralChangeDefeatsTheCachedTreeDigest) {
  struct Change {
    const char* what;
    std::function<void(const std::string&)> apply;
  };
  const Change changes[] = {
      {"an empty directory added",
       [](const std::string& t) { ::mkdir((t + "/new").c_str(), 0755); }},
      {"a directory's mode", [](const std::string& t) { ::chmod((t + "/sub").c_str(), 0700); }},
      {"the root's mode", [](const std::string& t) { ::chmod(t.c_str(), 0711); }},
      {"a symlink retargeted",
       [](const std::string& t) {
         ::unlink((t + "/link").c_str());
         ::symlink("run.sh", (t + "/link").c_str());
       }},
      {"a file renamed",
       [](const std::string& t) {
         ::rename((t + "/hello.txt").c_str(), (t + "/hello.text").c_str());
       }},
      {"a symlink removed", [](const std::string& t) { ::unlink((t + "/dangling").c_str()); }},
      {"an empty directory removed", [](const std::string& t) { ::rmdir((t + "/new").c_str()); }},
  };
  std::string previous = first.summary.sha256;
  for (const Change& c : changes) {
    c.apply(root);
    auto again = verify(request_for(root, state));
    EXPECT_FALSE(again.pin_cache.digest_from_cache) << c.what;
    EXPECT_EQ(again.summary.sha256, full_digest(root)) << c.what;
    EXPECT_NE(again.summary.sha256, previous) << c.what;
    previous = again.summary.sha256;
    auto settled = verify(request_for(root, state));
    EXPECT_TRUE(settled.pin_cache.digest_from_cache) << c.what << ": cached again afterwards";
    EXPECT_EQ(settled.summary.sha256, previous) << c.what;
  }
}

TEST_F(CacheFixture, ContentChangedWithItsMtimeRestoredIsCaughtByCtime) {
  const std::string f = root + "/sub/deeper/notes";
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  make_file(f, std::string(69999, 'n') + "X");  // same size, in place (same inode)
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);  // `touch -d`: mtime as it was
  struct stat after {};
  ASSERT_EQ(::stat(f.c_str(), &after), 0);
  ASSERT_EQ(after.st_ino, before.st_ino);
  ASSERT_EQ(after.st_size, before.st_size);
  ASSERT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  ASSERT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);

  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kPartial);
  EXPECT_EQ(again.pin_cache.rehashed, 1u);
  EXPECT_EQ(again.pin_cache.checked_by_stat, 5u);
  EXPECT_NE(again.summary.sha256, first.summary.sha256);
  EXPECT_EQ(again.summary.sha256, full_digest(root));
  EXPECT_TRUE(again.pin_cache.stored);
  EXPECT_EQ(verify(request_for(root, state)).pin_cache.status, PinCacheStatus::kHit);
}

TEST_F(CacheFixture, FileSwappedByRenameWithTheSameSizeAndMtimeIsCaught) {
  const std::string f = root + "/hello.txt";
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  make_file(root + "/.swap", "HELLO\n");
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (root + "/.swap").c_str(), times, 0), 0);
  ASSERT_EQ(::rename((root + "/.swap").c_str(), f.c_str()), 0);

  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.rehashed, 1u);
  EXPECT_EQ(again.summary.sha256, full_digest(root));
  EXPECT_NE(again.summary.sha256, first.summary.sha256);
}

// The same tree on a small ext4 file system of the test's own (a loop-mounted image: root, as the
// suite runs), so that no other process can take a freed inode before the test reuses it: on a
// shared file system a parallel test sometimes did, and the case could not be built.
struct PrivateFsCacheFixture : ::testing::Test {
  void SetUp() override {
    const std::string image = dir / "fs.img", mnt = dir / "mnt";
    ASSERT_EQ(::mkdir(mnt.c_str(), 0700), 0);
    ASSERT_EQ(std::system(("truncate -s 32M " + image + " && mkfs.ext4 -q -F " + image +
                           " && mount -o loop " + image + " " + mnt)
                              .c_str()),
              0)
        << "a private ext4 needs root and a loop device (docs/testbed.md: both here)";
    mounted = mnt;
    root = mnt + "/t";
    ASSERT_EQ(std::system(("cp -a " + rich_tree(dir) + " " + root).c_str()), 0);
    state = dir / "state";
    ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
    first = verify(request_for(root, state));
  }
  void TearDown() override {
    if (!mounted.empty()) ::umount2(mounted.c_str(), MNT_DETACH);  // the loop device autoclears
  }
  TempDir dir;
  std::string mounted, root, state;
  CachedTreeResult first;
};

TEST_F(PrivateFsCacheFixture, ANewFileOnAReusedInodeIsCaught) {
  // ext4 hands a freed inode to the next file created in the same directory; the new file has
  // the old one's inode, size and (restored) mtime, and only its ctime tells them apart.
  const std::string f = root + "/hello.txt";
  struct stat before {};
  ASSERT_EQ(::stat(f.c_str(), &before), 0);
  ASSERT_EQ(::unlink(f.c_str()), 0);
  make_file(f, "jello\n");
  struct stat now {};
  ASSERT_EQ(::stat(f.c_str(), &now), 0);
  ASSERT_EQ(now.st_ino, before.st_ino) << "ext4 did not reuse the freed inode on a private fs";
  ASSERT_EQ(now.st_size, before.st_size);
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);

  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.rehashed, 1u);
  EXPECT_EQ(again.summary.sha256, full_digest(root));
  EXPECT_NE(again.summary.sha256, first.summary.sha256);
}

TEST_F(CacheFixture, AddedAndRemovedFilesAreHandledAndTheCacheRewritten) {
  ASSERT_EQ(::unlink((root + "/run.sh").c_str()), 0);
  make_file(root + "/sub/new", "new");
  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kPartial);
  EXPECT_EQ(again.pin_cache.files, 6u);
  EXPECT_EQ(again.pin_cache.rehashed, 1u);
  EXPECT_TRUE(again.pin_cache.stored);
  EXPECT_EQ(again.summary.sha256, full_digest(root));

  ASSERT_EQ(::unlink((root + "/sub/new").c_str()), 0);  // gone: the cache must forget it
  auto fewer = verify(request_for(root, state));
  EXPECT_EQ(fewer.pin_cache.rehashed, 0u);
  EXPECT_TRUE(fewer.pin_cache.stored);
  auto stored = decode_digest_cache(read_text(cache_file()));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->entries.size(), fewer.summary.entries);
  EXPECT_EQ(stored->find("sub/new"), nullptr);
  EXPECT_EQ(verify(request_for(root, state)).pin_cache.digest_from_cache, true);
}

// A cache whose entry for `rel` carries the file's current stamp but the digest of other bytes,
// hashed at `hashed_at`: what a cache would say if a change had slipped past the stamp. Its tree
// digest is forged alike (the digest of no bytes), so that a forged cache believed shows in the
// result whichever way the digest is formed.
void forge_entry(const std::string& state, const std::string& root, const std::string& rel,
                 int64_t hashed_at, uid_t owner = 0) {
  auto content = decode_digest_cache(read_text(digest_cache_path(state, root)));
  ASSERT_TRUE(content.ok());
  DigestCacheInput forged = input_of(*content);
  forged.tree_sha256 = Sha256().finish();
  for (DigestCacheInput::Entry& f : forged.entries) {
    if (f.path != rel) continue;
    f.record.sha256 = Sha256().finish();  // the digest of no bytes at all
    f.record.stamp.hashed_at_ns = hashed_at;
  }
  const std::string path = digest_cache_path(state, root);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  write_text(path, encode_digest_cache(forged));
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_EQ(::chown(path.c_str(), owner, owner), 0);
}

int64_t ctime_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return timespec_ns(st.st_ctim);
}

TEST_F(CacheFixture, AnEntryHashedInTheSecondOfItsLastChangeIsReHashed) {
  const std::string rel = "hello.txt";
  const int64_t ctime = ctime_of(root + "/" + rel);
  // Hashed in the same second as the change (possibly before a second change that kept its
  // stamp): not trusted, so the forged digest is never used.
  forge_entry(state, root, rel, ctime);
  auto racy = verify(request_for(root, state));
  EXPECT_EQ(racy.pin_cache.rehashed, 1u);
  EXPECT_EQ(racy.summary.sha256, first.summary.sha256);

  // The control: hashed two seconds after the change, the same forged entry is trusted — this is
  // what the rule above prevents for racy entries.
  forge_entry(state, root, rel, ctime + 2 * kSecond);
  auto settled = verify(request_for(root, state));
  EXPECT_EQ(settled.pin_cache.rehashed, 0u);
  EXPECT_NE(settled.summary.sha256, first.summary.sha256);
  EXPECT_EQ(settled.summary.sha256, Sha256().finish_hex());
}

TEST_F(CacheFixture, ACachedDigestNeverDecidesAFailure) {
  forge_entry(state, root, "hello.txt", ctime_of(root + "/hello.txt") + 2 * kSecond);
  CachedTreeRequest r = request_for(root, state);
  r.expected_sha256 = first.summary.sha256;
  auto confirmed = verify(r);
  EXPECT_EQ(confirmed.summary.sha256, first.summary.sha256) << "confirmed from the bytes";
  EXPECT_THAT(confirmed.pin_cache.reason, HasSubstr("hashed again to confirm"));
  EXPECT_EQ(confirmed.pin_cache.rehashed, 6u);
}

TEST_F(CacheFixture, ACorruptedCacheIsDetectedIgnoredAndReplaced) {
  std::string bytes = read_text(cache_file());
  bytes[bytes.size() / 2] ^= 1;
  write_text(cache_file(), bytes);
  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kCorrupt);
  EXPECT_THAT(again.pin_cache.reason, HasSubstr("integrity digest"));
  EXPECT_EQ(again.pin_cache.rehashed, 6u);
  EXPECT_EQ(again.summary.sha256, first.summary.sha256);
  EXPECT_TRUE(again.pin_cache.stored);
  EXPECT_EQ(verify(request_for(root, state)).pin_cache.status, PinCacheStatus::kHit);
}

TEST_F(CacheFixture, ACacheOwnedByAnotherUserOrWritableByOthersIsIgnored) {
  // Owned by nobody, with a forged digest that would pass the stamp check: never believed.
  forge_entry(state, root, "hello.txt", ctime_of(root + "/hello.txt") + 2 * kSecond, 65534);
  auto foreign = verify(request_for(root, state));
  EXPECT_EQ(foreign.pin_cache.status, PinCacheStatus::kIgnored);
  EXPECT_THAT(foreign.pin_cache.reason, HasSubstr("owned by uid 65534"));
  EXPECT_EQ(foreign.pin_cache.rehashed, 6u);
  EXPECT_EQ(foreign.summary.sha256, first.summary.sha256);
  EXPECT_TRUE(foreign.pin_cache.stored) << "replaced by a root-owned one";
  struct stat st {};
  ASSERT_EQ(::stat(cache_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());

  ASSERT_EQ(::chmod(cache_file().c_str(), 0620), 0);
  auto group_writable = verify(request_for(root, state));
  EXPECT_EQ(group_writable.pin_cache.status, PinCacheStatus::kIgnored);
  EXPECT_THAT(group_writable.pin_cache.reason, HasSubstr("writable by group or others"));
}

TEST_F(CacheFixture, AnUntrustedCacheDirectoryIsNeitherReadNorWritten) {
  ASSERT_EQ(::chmod((state + "/cache/digests").c_str(), 0777), 0);
  const auto before = std::filesystem::last_write_time(cache_file());
  make_file(root + "/another", "x");
  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kIgnored);
  EXPECT_THAT(again.pin_cache.reason, HasSubstr("digests is writable by group or others"));
  EXPECT_FALSE(again.pin_cache.stored);
  EXPECT_EQ(std::filesystem::last_write_time(cache_file()), before);
  EXPECT_EQ(again.summary.sha256, full_digest(root));
}

TEST_F(CacheFixture, ACacheOfAnotherTreeIsRefused) {
  TempDir other_dir;
  const std::string other = rich_tree(other_dir);
  ASSERT_EQ(::rename(cache_file().c_str(), digest_cache_path(state, other).c_str()), 0);
  auto again = verify(request_for(other, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kCorrupt);
  EXPECT_THAT(again.pin_cache.reason, HasSubstr("describes " + root));
}

TEST_F(CacheFixture, AnOversizedCacheFileIsNotRead) {
  ASSERT_EQ(::truncate(cache_file().c_str(), static_cast<off_t>(kDigestCacheMaxBytes) + 1), 0);
  auto again = verify(request_for(root, state));
  EXPECT_EQ(again.pin_cache.status, PinCacheStatus::kIgnored);
  EXPECT_THAT(again.pin_cache.reason, HasSubstr("more than the limit"));
}

TEST_F(CacheFixture, RehashBypassesTheCacheAndRefreshesIt) {
  CachedTreeRequest r = request_for(root, state);
  r.rehash = true;
  auto bypassed = verify(r);
  EXPECT_EQ(bypassed.pin_cache.status, PinCacheStatus::kBypassed);
  EXPECT_EQ(bypassed.pin_cache.checked_by_stat, 0u);
  EXPECT_EQ(bypassed.pin_cache.rehashed, 6u);
  EXPECT_TRUE(bypassed.pin_cache.stored);
  EXPECT_EQ(bypassed.summary.sha256, first.summary.sha256);

  auto j = pin_cache_to_json(bypassed.pin_cache);
  EXPECT_EQ(j["status"], "bypassed");
  EXPECT_EQ(j["root"], root);
  EXPECT_EQ(j["checked_by_stat"], 0);
  EXPECT_EQ(j["rehashed"], 6);
  EXPECT_EQ(j["files"], 6);
  EXPECT_FALSE(j.contains("reason"));
}

TEST(CachedTree, FilesChangedInTheSecondTheyWereHashedAreNotStored) {
  TempDir dir;
  const std::string root = rich_tree(dir);
  const std::string state = dir / "state";
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  CachedTreeRequest r = request_for(root, state);
  const int64_t ctime = ctime_of(root + "/hello.txt");
  r.tree.stamp_clock = [ctime] { return ctime; };  // hashed as the files were written
  auto first = verify(r);
  EXPECT_TRUE(first.pin_cache.stored);
  auto stored = decode_digest_cache(read_text(digest_cache_path(state, root)));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->find("hello.txt"), nullptr);
}

TEST(CachedTree, WithoutAStateDirectoryNothingIsReadOrWritten) {
  TempDir dir;
  const std::string root = rich_tree(dir);
  CachedTreeRequest r = request_for(root, "");
  auto result = verify(r);
  EXPECT_EQ(result.pin_cache.status, PinCacheStatus::kBypassed);
  EXPECT_FALSE(result.pin_cache.stored);
  EXPECT_EQ(result.summary.sha256, full_digest(root));
}

}  // namespace
}  // namespace sealrun
