// SPDX-License-Identifier: Apache-2.0
// The bwrap probe cache (containment/bwrap_probe_cache.h) against the real rootless bwrap: the
// first probe starts the throwaway sandbox and writes the entry; a fresh mechanism then takes the
// same findings from it; a bwrap binary whose bytes differ, an entry from another boot, a corrupt
// entry and an entry that is not private are each ignored with the reason, and the sandbox probe
// runs again (and rewrites a valid entry).
#include "containment/bwrap_probe_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "containment/bwrap.h"
#include "core/process.h"
#include "fingerprint/sha256.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class ProbeCache : public ::testing::Test {
 protected:
  void SetUp() override {
    auto bwrap = find_program("bwrap");
    if (!bwrap) GTEST_SKIP() << "bwrap is not installed";  // .ci/setup installs it
    bwrap_ = *bwrap;
    cache_ = dir_ / "probe-cache";
  }

  MechanismProbe probe(const std::string& bwrap_path = "") {
    BwrapOptions o;
    o.probe_cache_dir = cache_;
    o.bwrap_path = bwrap_path;
    return BwrapMechanism(o).probe();  // a fresh object: nothing memoized
  }

  std::string entry_path() const { return cache_ + "/" + bwrap_internal::kProbeCacheFile; }

  TempDir dir_;
  std::string bwrap_;
  std::string cache_;
};

TEST_F(ProbeCache, FirstProbeWritesTheEntryAndTheNextIsServedFromIt) {
  auto first = probe();
  ASSERT_TRUE(first.available) << first.unavailable_reason;
  ASSERT_TRUE(first.cache.has_value());
  EXPECT_FALSE(first.cache->cached);
  EXPECT_EQ(first.cache->key.size(), 64u);
  EXPECT_NE(first.cache->note.find("no entry"), std::string::npos) << first.cache->note;
  struct stat st {};
  ASSERT_EQ(::stat(entry_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  auto second = probe();
  ASSERT_TRUE(second.cache.has_value());
  EXPECT_TRUE(second.cache->cached) << second.cache->note;
  EXPECT_EQ(second.cache->note, "hit");
  EXPECT_EQ(second.cache->key, first.cache->key);
  EXPECT_EQ(second.enforceable().names(), first.enforceable().names());
  EXPECT_EQ(second.version, first.version);
  ASSERT_EQ(second.dimensions.size(), first.dimensions.size());
  for (size_t i = 0; i < first.dimensions.size(); ++i)
    EXPECT_EQ(second.dimensions[i].why, first.dimensions[i].why);
}

TEST_F(ProbeCache, ABwrapBinaryWhoseBytesDifferIsProbedAgain) {
  ASSERT_TRUE(probe().available);
  // A copy with one more byte at the end: the same program, other bytes. In a directory the job
  // user can reach (the probe runs it as that user).
  std::string copy_dir = "/tmp/sealrun-bwrap-copy-" + std::to_string(::getpid());
  fs::create_directories(copy_dir);
  fs::permissions(copy_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::string copy = copy_dir + "/bwrap";
  spit(copy, slurp(bwrap_) + std::string(1, '\0'));
  // Readable too: a program its user cannot read runs undumpable, and bwrap then may not write
  // its own uid map.
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);

  auto changed = probe(copy);
  auto again = probe(copy);
  auto back = probe();
  fs::remove_all(copy_dir);

  ASSERT_TRUE(changed.available) << changed.unavailable_reason;
  ASSERT_TRUE(changed.cache.has_value());
  EXPECT_FALSE(changed.cache->cached);
  EXPECT_NE(changed.cache->note.find("the bwrap binary changed"), std::string::npos)
      << changed.cache->note;
  EXPECT_TRUE(again.cache->cached) << again.cache->note;  // the copy's own entry now
  EXPECT_NE(again.cache->key, back.cache->key);
  EXPECT_FALSE(back.cache->cached);  // and the original is a change again
  EXPECT_NE(back.cache->note.find("the bwrap binary changed"), std::string::npos);
}

TEST_F(ProbeCache, AnEntryFromAnotherBootIsNeverTrusted) {
  ASSERT_TRUE(probe().available);
  // A well-formed entry (its digest made to match) whose only difference is the boot id.
  auto doc = nlohmann::json::parse(slurp(entry_path()));
  doc["entry"]["key"]["boot_id"] = "00000000-0000-0000-0000-000000000000";
  doc["sha256"] = sha256_hex(doc["entry"].dump());
  spit(entry_path(), doc.dump());
  auto p = probe();
  ASSERT_TRUE(p.cache.has_value());
  EXPECT_FALSE(p.cache->cached);
  EXPECT_NE(p.cache->note.find("another boot"), std::string::npos) << p.cache->note;
  EXPECT_TRUE(probe().cache->cached);  // rewritten for this boot
}

TEST_F(ProbeCache, ACorruptEntryIsIgnoredAndRewritten) {
  ASSERT_TRUE(probe().available);
  std::string bytes = slurp(entry_path());
  // Claim a dimension bwrap cannot enforce: the digest no longer matches.
  auto at = bytes.find("\"enforceable\": false");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 20, "\"enforceable\": true ");
  spit(entry_path(), bytes);
  auto p = probe();
  ASSERT_TRUE(p.cache.has_value());
  EXPECT_FALSE(p.cache->cached);
  EXPECT_EQ(p.cache->note.rfind("corrupt", 0), 0u) << p.cache->note;
  EXPECT_FALSE(p.enforceable().contains(Dimension::kMemory));  // probed, not the forged claim
  EXPECT_TRUE(probe().cache->cached);

  spit(entry_path(), "{not json");
  auto q = probe();
  EXPECT_FALSE(q.cache->cached);
  EXPECT_EQ(q.cache->note.rfind("corrupt", 0), 0u) << q.cache->note;
}

TEST_F(ProbeCache, AnEntryOthersCouldWriteIsIgnored) {
  ASSERT_TRUE(probe().available);
  ASSERT_EQ(::chmod(entry_path().c_str(), 0666), 0);
  auto p = probe();
  EXPECT_FALSE(p.cache->cached);
  EXPECT_NE(p.cache->note.find("not a private regular file"), std::string::npos) << p.cache->note;
}

TEST_F(ProbeCache, WithoutACacheDirectoryTheProbeSaysNothingOfOne) {
  BwrapOptions o;
  auto p = BwrapMechanism(o).probe();
  ASSERT_TRUE(p.available) << p.unavailable_reason;
  EXPECT_FALSE(p.cache.has_value());
}

}  // namespace
}  // namespace sealrun
