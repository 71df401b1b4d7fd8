// The digest cache through real runs (docs/digest-cache.md: pins of unchanged trees are
// re-verified at stat speed; issue 16 item 2): the first run hashes the toolchain and stores the
// cache, the next verifies it by a stat walk, `--rehash` bypasses it, and a file changed behind
// the cache's back with its mtime put back is still caught (its ctime moved), refusing the run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <filesystem>

#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class PinCacheTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    // A toolchain with more than one file, so that "all by stat" is a count to check.
    for (int i = 0; i < 20; ++i)
      write_text(toolchain_ + "/lib" + std::to_string(i) + ".txt", std::string(100 + i, 'x'));
    // The racy-index rule re-hashes a file whose ctime is not older than the second it was hashed
    // in; a toolchain made just now would be re-hashed every time within that second.
    ::sleep(1);
  }

  // The pin_cache entry of the toolchain check before the job.
  static json before_job(const json& receipt) {
    EXPECT_TRUE(receipt["pin_cache"].is_array()) << receipt.dump(2);
    EXPECT_GE(receipt["pin_cache"].size(), 1u) << receipt["pin_cache"].dump();
    return receipt["pin_cache"].empty() ? json() : receipt["pin_cache"][0];
  }
};

TEST_F(PinCacheTest, TheSecondRunVerifiesTheToolchainByStatAndRehashBypassesIt) {
  auto a = freeze("true");
  auto first = run(a, "first");
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  json p1 = before_job(receipt("first"));
  EXPECT_EQ(p1["status"], "miss") << p1;
  EXPECT_EQ(p1["stored"], true) << p1;
  EXPECT_EQ(p1["checked_by_stat"], 0u);

  auto second = run(a, "second");
  ASSERT_EQ(second.status.code, 0) << second.out << second.err;
  json r2 = receipt("second");
  json p2 = before_job(r2);
  EXPECT_EQ(p2["status"], "hit") << p2;
  EXPECT_EQ(p2["rehashed"], 0u) << p2;
  EXPECT_EQ(p2["checked_by_stat"], p2["files"]) << p2;
  EXPECT_GE(p2["files"].get<uint64_t>(), 21u) << p2;
  // The check after the job uses it too. (After each toolchain check: the pinned busybox tree,
  // the job's /bin, verified like the toolchain, before the job and after it.)
  std::vector<json> toolchain_checks;
  for (const json& p : r2["pin_cache"])
    if (p["root"] == toolchain_) toolchain_checks.push_back(p);
  ASSERT_EQ(toolchain_checks.size(), 2u) << r2["pin_cache"].dump();
  EXPECT_EQ(toolchain_checks[1]["status"], "hit") << toolchain_checks[1];
  ASSERT_EQ(r2["pin_cache"].size(), 4u) << r2["pin_cache"].dump();
  EXPECT_EQ(r2["pin_cache"][1]["status"], "hit") << r2["pin_cache"][1];  // the tree, by stat
  EXPECT_EQ(r2["pin_cache"][3]["root"], r2["pin_cache"][1]["root"]);     // and after the job
  EXPECT_EQ(r2["pin_cache"][3]["status"], "hit") << r2["pin_cache"][3];

  auto third = run(a, "third", {"--rehash"});
  ASSERT_EQ(third.status.code, 0) << third.out << third.err;
  json p3 = before_job(receipt("third"));
  EXPECT_EQ(p3["status"], "bypassed") << p3;
  EXPECT_EQ(p3["rehashed"], p3["files"]) << p3;
}

TEST_F(PinCacheTest, AFileChangedWithItsMtimePutBackIsStillCaught) {
  auto a = freeze("true");
  ASSERT_EQ(run(a, "warm").status.code, 0);
  ASSERT_EQ(before_job(receipt("warm"))["stored"], true);

  // Same size, same mtime afterwards: only the ctime tells.
  std::string victim = toolchain_ + "/lib7.txt";
  struct stat before {};
  ASSERT_EQ(::stat(victim.c_str(), &before), 0);
  write_text(victim, std::string(107, 'y'));
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, victim.c_str(), times, 0), 0);

  auto c = run(a, "changed");
  EXPECT_EQ(c.status.code, 3) << c.out << c.err;
  json r = receipt("changed");
  EXPECT_EQ(r["state"], "not_run");
  bool named = false;
  for (const auto& v : r["verifications"])
    named =
        named || (v["target"] == "toolchain.tree_sha256" && v["result"] == "fail" &&
                  v["observed"].get<std::string>().find("changed: lib7.txt") != std::string::npos);
  // Named like a pinned tree's change: the toolchain and trees are checked by one piece of code.
  EXPECT_TRUE(named) << r["verifications"].dump(2);
  json p = before_job(r);
  EXPECT_NE(p["status"], "hit") << p;
  EXPECT_GE(p["rehashed"].get<uint64_t>(), 1u) << p;
}

TEST_F(PinCacheTest, AdmitCheckUsesTheSameCacheAndRehashBypassesIt) {
  auto a = freeze("true");
  ASSERT_EQ(run(a, "warm").status.code, 0);
  auto check =
      sealrun({"admit", "check", a.path, "--sha256", a.sha256, "--state-dir", state_, "--json"});
  ASSERT_EQ(check.status.code, 0) << check.out << check.err;
  json j = json::parse(check.out);
  ASSERT_EQ(j["pin_cache"].size(), 2u) << j.dump(2);  // the toolchain, then the busybox tree
  EXPECT_EQ(j["pin_cache"][0]["root"], toolchain_);
  EXPECT_EQ(j["pin_cache"][0]["status"], "hit");
  EXPECT_EQ(j["pin_cache"][1]["status"], "hit");
  auto rehash = sealrun({"admit", "check", a.path, "--sha256", a.sha256, "--state-dir", state_,
                         "--rehash", "--json"});
  ASSERT_EQ(rehash.status.code, 0) << rehash.out << rehash.err;
  for (const json& p : json::parse(rehash.out)["pin_cache"]) EXPECT_EQ(p["status"], "bypassed");
}

}  // namespace
}  // namespace sealrun::testing
