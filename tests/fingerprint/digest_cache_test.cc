// The digest cache's file format: an exact round trip, every damaged byte and every truncation
// detected by the integrity digest, and strict parsing of content that carries a valid digest
// (unsorted or non-canonical paths, a file-system index out of range, another version, trailing
// bytes). Also the racy-index rule of file_stamp.h, table-driven.
#include "fingerprint/digest_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fingerprint/sha256.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000'000;

DigestCacheContent sample() {
  DigestCacheContent c;
  c.root = "/opt/toolchain";
  for (size_t i = 0; i < c.tree_sha256.size(); ++i)
    c.tree_sha256[i] = static_cast<uint8_t>(200 - i);
  c.filesystems = {{0x801, 0x1234567890abcdefull, 0xEF53}, {0x2a, 0x42, 0x01021994}};
  const char* paths[] = {".",       "bin", "bin/cc", "bin/cc1", "include/stdio.h", "lib/libc.so.6",
                         "\xff\xfe"};
  int64_t t = 1'700'000'000 * kSecond;
  for (const char* p : paths) {
    CachedEntry f;
    f.path = p;
    f.kind = f.path == "." || f.path == "bin" ? EntryKind::kDirectory
             : f.path == "bin/cc"             ? EntryKind::kSymlink
                                              : EntryKind::kFile;
    f.mode = f.kind == EntryKind::kSymlink ? 0777 : 0755;
    f.uid = 1000;
    f.gid = static_cast<uint32_t>(t % 5);
    f.fs = f.path == "lib/libc.so.6" ? 1 : 0;
    f.stamp = FileStamp{static_cast<uint64_t>(t % 1000003), static_cast<uint64_t>(t % 77), t, t + 5,
                        t + 3 * kSecond};
    if (f.kind == EntryKind::kFile)
      for (size_t i = 0; i < f.sha256.size(); ++i) f.sha256[i] = static_cast<uint8_t>(i * 7 + t);
    c.entries.push_back(f);
    t += 12345;
  }
  return c;
}

// Replaces the trailing integrity digest so that only the parse can refuse `bytes`.
std::string reseal(std::string bytes) {
  bytes.resize(bytes.size() - 32);
  Sha256 sha;
  sha.update(bytes);
  auto d = sha.finish();
  bytes.append(reinterpret_cast<const char*>(d.data()), d.size());
  return bytes;
}

void expect_same(const DigestCacheContent& a, const DigestCacheContent& b) {
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.filesystems, b.filesystems);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].path, b.entries[i].path);
    EXPECT_EQ(a.entries[i].fs, b.entries[i].fs);
    EXPECT_EQ(a.entries[i].kind, b.entries[i].kind);
    EXPECT_EQ(a.entries[i].mode, b.entries[i].mode);
    EXPECT_EQ(a.entries[i].uid, b.entries[i].uid);
    EXPECT_EQ(a.entries[i].gid, b.entries[i].gid);
    EXPECT_EQ(a.entries[i].stamp.ino, b.entries[i].stamp.ino);
    EXPECT_EQ(a.entries[i].stamp.size, b.entries[i].stamp.size);
    EXPECT_EQ(a.entries[i].stamp.mtime_ns, b.entries[i].stamp.mtime_ns);
    EXPECT_EQ(a.entries[i].stamp.ctime_ns, b.entries[i].stamp.ctime_ns);
    EXPECT_EQ(a.entries[i].stamp.hashed_at_ns, b.entries[i].stamp.hashed_at_ns);
    EXPECT_EQ(a.entries[i].sha256, b.entries[i].sha256);
  }
}

TEST(DigestCacheFormat, RoundTripsExactlyAndFindsByPath) {
  const DigestCacheContent c = sample();
  const std::string bytes = encode_digest_cache(c);
  auto back = decode_digest_cache(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_same(c, *back);
  EXPECT_EQ(encode_digest_cache(*back), bytes);  // one encoding per content
  ASSERT_NE(back->find("bin/cc1"), nullptr);
  EXPECT_EQ(back->find("bin/cc1")->path, "bin/cc1");
  ASSERT_NE(back->find("."), nullptr);
  EXPECT_EQ(back->find(".")->kind, EntryKind::kDirectory);
  EXPECT_EQ(back->find("bin/c"), nullptr);
  EXPECT_EQ(back->find("zzz"), nullptr);
}

TEST(DigestCacheFormat, EmptyCacheRoundTrips) {
  DigestCacheContent c;
  c.root = "/t";
  auto back = decode_digest_cache(encode_digest_cache(c));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(back->entries.empty());
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
      reseal(bytes.substr(0, bytes.size() - 32) + "xy" + std::string(32, '\0')));
  ASSERT_FALSE(resealed_extra.ok());
  EXPECT_THAT(resealed_extra.error().message(), HasSubstr("after the last entry"));
}

TEST(DigestCacheFormat, ContentWithAValidDigestIsStillParsedStrictly) {
  struct Case {
    const char* name;
    std::function<void(DigestCacheContent&)> spoil;
    const char* message;
  };
  const Case cases[] = {
      {"unsorted", [](DigestCacheContent& c) { std::swap(c.entries[2], c.entries[4]); },
       "out of order"},
      {"duplicate", [](DigestCacheContent& c) { c.entries[3].path = c.entries[2].path; },
       "bad path lengths"},
      {"fs index", [](DigestCacheContent& c) { c.entries[3].fs = 2; }, "file system 2 of 2"},
      {"kind", [](DigestCacheContent& c) { c.entries[3].kind = static_cast<EntryKind>(3); },
       "kind 3"},
      {"mode", [](DigestCacheContent& c) { c.entries[3].mode = 010000; }, "mode 10000"},
      {"digest of a directory", [](DigestCacheContent& c) { c.entries[1].sha256[0] = 1; },
       "not a file but has a digest"},
      {"nul in path",
       [](DigestCacheContent& c) {
         static const std::string with_nul("\xff\xfe\0x", 4);
         c.entries[6].path = with_nul;
       },
       "NUL"},
  };
  for (const Case& k : cases) {
    DigestCacheContent c = sample();
    k.spoil(c);
    auto r = decode_digest_cache(encode_digest_cache(c));  // the encoder seals whatever it gets
    ASSERT_FALSE(r.ok()) << k.name;
    EXPECT_THAT(r.error().message(), HasSubstr(k.message)) << k.name;
  }

  std::string other_version = encode_digest_cache(sample());
  other_version[8] = 2;
  auto v = decode_digest_cache(reseal(other_version));
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.error().message(), HasSubstr("version 2"));

  std::string magic = encode_digest_cache(sample());
  magic[0] = 'X';
  EXPECT_THAT(decode_digest_cache(reseal(magic)).error().message(), HasSubstr("not a sealrun"));

  // A non-canonical shared prefix: "bin/cc" then "bin/cc1" written as shared 3 + "cc1".
  DigestCacheContent two;
  two.root = "/r";
  two.filesystems = {{1, 2, 3}};
  two.entries.resize(2);
  two.entries[0].path = "bin/cc";
  two.entries[1].path = "bin/cc1";
  std::string bytes = encode_digest_cache(two);
  const std::string canonical = std::string(
      "\x06\0\0\0\x01\0\0\0"
      "1",
      9);
  const size_t at = bytes.find(canonical);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, canonical.size(),
                std::string("\x04\0\0\0\x03\0\0\0"
                            "cc1",
                            11));
  auto nc = decode_digest_cache(reseal(bytes));
  ASSERT_FALSE(nc.ok());
  EXPECT_THAT(nc.error().message(), HasSubstr("non-canonical"));
}

TEST(DigestCacheFormat, AHugeFileCountIsRefusedBeforeAnyAllocation) {
  DigestCacheContent c;
  c.root = "/r";
  std::string bytes = encode_digest_cache(c);
  // The entry count is the 8 bytes before the trailer; claim 2^62 entries.
  const size_t count_at = bytes.size() - 32 - 8;
  for (int i = 0; i < 8; ++i) bytes[count_at + i] = i == 7 ? 0x40 : 0;
  auto r = decode_digest_cache(reseal(bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("bad entry count"));
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
