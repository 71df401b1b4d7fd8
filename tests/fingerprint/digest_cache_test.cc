// SPDX-License-Identifier: Apache-2.0
// The digest cache's file format: an exact round trip (and one encoding per content), every
// entry found through the stored index, every damaged byte and every truncation detected by the
// integrity digest, and strict checking of content that carries a valid digest (unsorted or
// duplicate paths, a NUL in a path, a file-system index out of range, a bad kind or mode, a slot
// naming no entry or one twice, padding or reserved bytes that are not zero, path bounds that do
// not follow each other, another version, trailing bytes, a huge count). Also the racy-index
// rule of file_stamp.h, table-driven.
#include "fingerprint/digest_cache.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000'000;

DigestCacheInput sample() {
  DigestCacheInput c;
  c.root = "/opt/toolchain";
  for (size_t i = 0; i < c.tree_sha256.size(); ++i)
    c.tree_sha256[i] = static_cast<uint8_t>(200 - i);
  c.filesystems = {{0x801, 0x1234567890abcdefull, 0xEF53}, {0x2a, 0x42, 0x01021994}};
  const char* paths[] = {".",       "bin", "bin/cc", "bin/cc1", "include/stdio.h", "lib/libc.so.6",
                         "\xff\xfe"};
  int64_t t = 1'700'000'000 * kSecond;
  for (const char* p : paths) {
    DigestCacheInput::Entry& in = c.entries.emplace_back();
    in.path = p;
    CachedEntry& f = in.record;
    f.kind = in.path == "." || in.path == "bin" ? EntryKind::kDirectory
             : in.path == "bin/cc"              ? EntryKind::kSymlink
                                                : EntryKind::kFile;
    f.mode = f.kind == EntryKind::kSymlink ? 0777 : 0755;
    f.uid = 1000;
    f.gid = static_cast<uint32_t>(t % 5);
    f.fs = in.path == "lib/libc.so.6" ? 1 : 0;
    f.stamp = FileStamp{static_cast<uint64_t>(t % 1000003), static_cast<uint64_t>(t % 77), t, t + 5,
                        t + 3 * kSecond};
    if (f.kind == EntryKind::kFile)
      for (size_t i = 0; i < f.sha256.size(); ++i) f.sha256[i] = static_cast<uint8_t>(i * 7 + t);
    if (f.kind == EntryKind::kDirectory) f.flags = CachedEntry::kListed;
    t += 12345;
  }
  return c;
}

// Where the parts of sample()'s encoding lie: a header of 152 bytes (magic, version, root length,
// "/opt/toolchain" padded to 16, the tree digest, two file systems, four counts), 7 entries of
// 112 bytes, 16 slots of 8 bytes, 4 children of 4 bytes ("." lists bin and \xff\xfe, bin its
// two), then the paths.
constexpr size_t kEntriesAt = 152;
constexpr size_t kSlotsAt = kEntriesAt + 7 * sizeof(CachedEntry);
constexpr size_t kChildrenAt = kSlotsAt + 16 * 8;
constexpr size_t kPathsAt = kChildrenAt + 4 * 4;

// Replaces the trailing integrity digest so that only the structural checks can refuse `bytes`.
std::string reseal(std::string bytes) {
  bytes.resize(bytes.size() - 32);
  Sha256 sha;
  sha.update(bytes);
  auto d = sha.finish();
  bytes.append(reinterpret_cast<const char*>(d.data()), d.size());
  return bytes;
}

void expect_same(const DigestCacheInput& a, const DigestCacheContent& b) {
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.tree_sha256, b.tree_sha256);
  EXPECT_EQ(a.filesystems, b.filesystems);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const CachedEntry& x = a.entries[i].record;
    const CachedEntry& y = b.entries[i];
    EXPECT_EQ(a.entries[i].path, b.path(y));
    EXPECT_EQ(x.fs, y.fs);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.mode, y.mode);
    EXPECT_EQ(x.uid, y.uid);
    EXPECT_EQ(x.gid, y.gid);
    EXPECT_EQ(x.stamp.ino, y.stamp.ino);
    EXPECT_EQ(x.stamp.size, y.stamp.size);
    EXPECT_EQ(x.stamp.mtime_ns, y.stamp.mtime_ns);
    EXPECT_EQ(x.stamp.ctime_ns, y.stamp.ctime_ns);
    EXPECT_EQ(x.stamp.hashed_at_ns, y.stamp.hashed_at_ns);
    EXPECT_EQ(x.sha256, y.sha256);
  }
}

TEST(DigestCacheFormat, RoundTripsExactlyAndFindsByPath) {
  const DigestCacheInput c = sample();
  const std::string bytes = encode_digest_cache(c);
  ASSERT_EQ(bytes.size(), kPathsAt + 48 + 32);  // 46 bytes of paths, padded to 48, the digest
  auto back = decode_digest_cache(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_same(c, *back);
  EXPECT_EQ(encode_digest_cache(input_of(*back)), bytes);  // one encoding per content
  for (const auto& e : c.entries) {
    const CachedEntry* found = back->find(e.path);
    ASSERT_NE(found, nullptr) << e.path;
    EXPECT_EQ(back->path(*found), e.path);
  }
  EXPECT_EQ(back->find(".")->kind, EntryKind::kDirectory);
  const auto root_children = back->children(*back->find("."));
  EXPECT_EQ(std::vector<uint32_t>(root_children.begin(), root_children.end()),
            (std::vector<uint32_t>{1, 6}));
  const auto bin_children = back->children(*back->find("bin"));
  EXPECT_EQ(std::vector<uint32_t>(bin_children.begin(), bin_children.end()),
            (std::vector<uint32_t>{2, 3}));
  EXPECT_TRUE(back->children(*back->find("bin/cc1")).empty());
  // A directory that is not listed (one of its children was not stored) has no children here.
  DigestCacheInput unlisted = sample();
  unlisted.entries[1].record.flags = 0;
  auto partly = decode_digest_cache(encode_digest_cache(unlisted));
  ASSERT_TRUE(partly.ok()) << partly.error().message();
  EXPECT_TRUE(partly->children(*partly->find("bin")).empty());
  EXPECT_EQ(partly->children(*partly->find(".")).size(), 2u);
  EXPECT_EQ(back->find("bin/c"), nullptr);
  EXPECT_EQ(back->find("zzz"), nullptr);
  EXPECT_EQ(back->find(""), nullptr);
}

TEST(DigestCacheFormat, ManyEntriesAreAllFoundAndMisalignedBytesStillDecode) {
  DigestCacheInput c;
  c.root = "/many";
  c.filesystems = {{1, 2, 3}};
  std::vector<std::string> paths;
  for (int i = 0; i < 5000; ++i) paths.push_back(fmt::format("dir{:03}/file{:05}", i % 97, i));
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) c.entries.push_back({p, CachedEntry{}});
  const std::string bytes = encode_digest_cache(c);
  // One byte off an 8-byte boundary: decoded from an aligned copy.
  std::string shifted = "x" + bytes;
  auto back = decode_digest_cache(std::string_view(shifted).substr(1));
  ASSERT_TRUE(back.ok()) << back.error().message();
  for (const auto& p : paths) {
    const CachedEntry* found = back->find(p);
    ASSERT_NE(found, nullptr) << p;
    EXPECT_EQ(back->path(*found), p);
  }
  EXPECT_EQ(back->find("dir000/file99999"), nullptr);
}

TEST(DigestCacheFormat, APathLongerThanTheLimitIsLeftOut) {
  DigestCacheInput c = sample();
  const std::string long_path = "include/" + std::string(kDigestCacheMaxPathBytes, 'x');
  c.entries.insert(c.entries.begin() + 5, {long_path, CachedEntry{}});
  auto back = decode_digest_cache(encode_digest_cache(c));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->entries.size(), 7u);
  EXPECT_EQ(back->find(long_path), nullptr);
  EXPECT_EQ(back->children(*back->find("bin")).size(), 2u);
  // One of bin's children left out: bin can no longer be listed from the cache.
  DigestCacheInput lost_child = sample();
  const std::string long_child = "bin/" + std::string(kDigestCacheMaxPathBytes, 'y');
  lost_child.entries.insert(lost_child.entries.begin() + 4, {long_child, CachedEntry{}});
  auto unlisted = decode_digest_cache(encode_digest_cache(lost_child));
  ASSERT_TRUE(unlisted.ok()) << unlisted.error().message();
  EXPECT_TRUE(unlisted->children(*unlisted->find("bin")).empty());
  EXPECT_EQ(unlisted->children(*unlisted->find(".")).size(), 2u);
}

TEST(DigestCacheFormat, EmptyCacheRoundTrips) {
  DigestCacheInput c;
  c.root = "/t";
  auto back = decode_digest_cache(encode_digest_cache(c));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(back->entries.empty());
  EXPECT_EQ(back->find("."), nullptr);
}

TEST(DigestCacheFormat, EveryDamagedByteIsDetected) {
  const std::string bytes = encode_digest_cache(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    auto r = decode_digest_cache(damaged);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_THAT(r.error().message(), HasSubstr("corrupt digest cache")) << "byte " << i;
  }
}

TEST(DigestCacheFormat, EveryTruncationAndAnyTrailingByteIsDetected) {
  const std::string bytes = encode_digest_cache(sample());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_digest_cache(bytes.substr(0, n)).ok()) << "length " << n;
  EXPECT_FALSE(decode_digest_cache(bytes + "x").ok());
  auto resealed_extra = decode_digest_cache(
      reseal(bytes.substr(0, bytes.size() - 32) + std::string(8, 'x') + std::string(32, '\0')));
  ASSERT_FALSE(resealed_extra.ok());
  EXPECT_THAT(resealed_extra.error().message(), HasSubstr("bytes of paths where"));
}

TEST(DigestCacheFormat, ContentWithAValidDigestIsStillCheckedStrictly) {
  struct Case {
    const char* name;
    std::function<void(DigestCacheInput&)> spoil;
    const char* message;
  };
  const Case cases[] = {
      {"unsorted", [](DigestCacheInput& c) { std::swap(c.entries[2], c.entries[4]); },
       "out of order"},
      {"duplicate", [](DigestCacheInput& c) { c.entries[3].path = c.entries[2].path; },
       "out of order"},
      {"fs index", [](DigestCacheInput& c) { c.entries[3].record.fs = 2; }, "file system 2 of 2"},
      {"kind", [](DigestCacheInput& c) { c.entries[3].record.kind = static_cast<EntryKind>(3); },
       "kind 3"},
      {"mode", [](DigestCacheInput& c) { c.entries[3].record.mode = 010000; }, "mode 10000"},
      {"digest of a directory", [](DigestCacheInput& c) { c.entries[1].record.sha256[0] = 1; },
       "not a file but has a digest"},
      {"nul in path",
       [](DigestCacheInput& c) {
         static const std::string with_nul("\xff\xfe\0x", 4);
         c.entries[6].path = with_nul;
       },
       "NUL"},
  };
  for (const Case& k : cases) {
    DigestCacheInput c = sample();
    k.spoil(c);
    auto r = decode_digest_cache(encode_digest_cache(c));  // the encoder seals whatever it gets
    ASSERT_FALSE(r.ok()) << k.name;
    EXPECT_THAT(r.error().message(), HasSubstr(k.message)) << k.name;
  }

  // Byte-level spoils of a good encoding, resealed.
  struct ByteCase {
    const char* name;
    std::function<void(std::string&)> spoil;
    const char* message;
  };
  auto u32_at = [](std::string& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); };
  auto u64_at = [](std::string& b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); };
  auto first_used_slot = [](const std::string& b) {
    size_t at = kSlotsAt;
    while (b.substr(at, 8) == std::string(8, '\0')) at += 8;
    return at;
  };
  const ByteCase byte_cases[] = {
      {"version", [&](std::string& b) { b[8] = 4; }, "version 4"},
      {"magic", [&](std::string& b) { b[0] = 'X'; }, "not a sealrun"},
      {"root padding", [&](std::string& b) { b[16 + 15] = 'y'; }, "after the root"},
      {"reserved after the fs count", [&](std::string& b) { b[16 + 16 + 32 + 4] = 1; },
       "bad file-system count"},
      {"huge entry count", [&](std::string& b) { u64_at(b, kEntriesAt - 32, 1ull << 62); },
       "bad entry count"},
      {"slot count", [&](std::string& b) { u64_at(b, kEntriesAt - 24, 32); }, "bad slot count"},
      {"child count", [&](std::string& b) { u64_at(b, kEntriesAt - 16, 9); }, "bad child count"},
      {"children of a file", [&](std::string& b) { b[kEntriesAt + 3 * 112 + 9] = 1; },
       "not a listed directory"},
      {"a child that is not one", [&](std::string& b) { u32_at(b, kChildrenAt + 8, 5); },
       "lists a child that is not one"},
      {"children out of order",
       [&](std::string& b) {
         u32_at(b, kChildrenAt + 8, 3);
         u32_at(b, kChildrenAt + 12, 2);
       },
       "bad children"},
      {"path offset", [&](std::string& b) { u32_at(b, kEntriesAt + 4 * 112, 0); },
       "bad path bounds in entry 4"},
      {"path size", [&](std::string& b) { u32_at(b, kEntriesAt + 4 * 112 + 4, 0); },
       "bad path bounds in entry 4"},
      {"reserved in an entry", [&](std::string& b) { b[kEntriesAt + 3 * 112 + 10] = 1; }, "kind"},
      {"slot naming no entry", [&](std::string& b) { u32_at(b, first_used_slot(b), 99); },
       "names no entry"},
      {"slot emptied", [&](std::string& b) { u64_at(b, first_used_slot(b), 0); },
       "leaves entries out"},
      {"path padding", [&](std::string& b) { b[kPathsAt + 47] = 'z'; }, "after the paths"},
  };
  for (const ByteCase& k : byte_cases) {
    std::string bytes = encode_digest_cache(sample());
    k.spoil(bytes);
    auto r = decode_digest_cache(reseal(bytes));
    ASSERT_FALSE(r.ok()) << k.name;
    EXPECT_THAT(r.error().message(), HasSubstr(k.message)) << k.name;
    EXPECT_THAT(r.error().message(), HasSubstr("corrupt digest cache")) << k.name;
  }
}

TEST(DigestCacheFormat, TheStoredIndexIsNotLibraryDependent) {
  // The index is stored, so its hash must be the same in every build: pinned values.
  EXPECT_EQ(digest_cache_path_hash(""), digest_cache_path_hash(std::string_view("", 0)));
  EXPECT_NE(digest_cache_path_hash("bin/cc"), digest_cache_path_hash("bin/cc1"));
  EXPECT_NE(digest_cache_path_hash("a"), digest_cache_path_hash(std::string_view("a\0", 2)));
  EXPECT_EQ(digest_cache_path_hash("usr/lib/x86_64-linux-gnu/libc.so.6"), 0xe19ed583d4f1ac2aull);
}

TEST(FileStampRule, TrustedOnlyWhenTheLastChangeLiesBeforeTheSecondOfHashing) {
  const int64_t t = 1'700'000'000 * kSecond;
  struct Row {
    int64_t ctime, hashed_at;
    bool settled;
  };
  const Row rows[] = {
      {t, t + 2 * kSecond, true},                   // changed well before
      {t + kSecond - 1, t + kSecond, true},         // the last ns of the previous second
      {t + kSecond, t + kSecond, false},            // changed as it was hashed
      {t + kSecond + 1, t + kSecond + 500, false},  // same second, after the hash began
      {t + 200, t + 900'000'000, false},            // same second, before: a 1 s clock cannot tell
      {t + 3 * kSecond, t, false},                  // changed after: never trusted
  };
  for (const Row& r : rows) {
    FileStamp s{1, 1, r.ctime, r.ctime, r.hashed_at};
    EXPECT_EQ(stamp_is_settled(s), r.settled) << r.ctime - t << " " << r.hashed_at - t;
  }
}

TEST(FileStampRule, EveryStatFieldAndTheFileSystemMustMatch) {
  const int64_t t = 1'700'000'000 * kSecond;
  const FsIdentity ext4{0x801, 99, 0xEF53};
  const FileStamp stamp{42, 10, t + 7, t + 9, t + 5 * kSecond};
  struct stat now {};
  now.st_ino = 42;
  now.st_size = 10;
  now.st_mtim = {static_cast<time_t>(t / kSecond), 7};
  now.st_ctim = {static_cast<time_t>(t / kSecond), 9};
  EXPECT_TRUE(stamp_still_holds(stamp, ext4, now, ext4));

  auto changed = [&](auto edit) {
    struct stat s = now;
    edit(s);
    return stamp_still_holds(stamp, ext4, s, ext4);
  };
  EXPECT_FALSE(changed([](struct stat& s) { s.st_ino = 43; }));
  EXPECT_FALSE(changed([](struct stat& s) { s.st_size = 11; }));
  EXPECT_FALSE(changed([](struct stat& s) { s.st_mtim.tv_nsec = 8; }));
  EXPECT_FALSE(changed([](struct stat& s) { s.st_ctim.tv_nsec = 10; }));
  EXPECT_FALSE(stamp_still_holds(stamp, ext4, now, FsIdentity{0x801, 98, 0xEF53}));  // other fs
  EXPECT_FALSE(stamp_still_holds(stamp, ext4, now, FsIdentity{0x802, 99, 0xEF53}));  // other dev
  const FsIdentity vfat{0x801, 99, 0x4d44};  // MSDOS_SUPER_MAGIC: ctime is the creation time
  EXPECT_FALSE(stamp_still_holds(stamp, vfat, now, vfat));
}

}  // namespace
}  // namespace sealrun
