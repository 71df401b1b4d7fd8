// SPDX-License-Identifier: Apache-2.0
// Issue 17 part 1 through real runs (real `sealrun run`, rootless bwrap, loop devices, cgroups):
// the first run of a state directory probes bwrap with a throwaway sandbox and makes its owned file
// system with mkfs.ext4; the next one takes the probe's findings from the cache and writes its file
// system from the template, and each receipt says which (grant.probe, owned_space.made). A bwrap
// binary whose bytes differ (SEALRUN_TEST_BWRAP, the documented test-only override) is probed
// again, and the run is still built.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/process.h"
#include "tests/controller/run_test_support.h"

extern char** environ;

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RunProbeCache : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "runs jobs as the job user and mounts: root (CI is root)";
  }

  json run_ok(const Frozen& a, const std::string& id,
              std::optional<std::vector<std::string>> env = std::nullopt) {
    auto c = sealrun({"run", a.path, "--sha256", a.sha256, "--id", id, "--state-dir", state_},
                     std::move(env));
    EXPECT_EQ(c.status.code, 0) << c.err;
    return receipt(id);
  }
};

TEST_F(RunProbeCache, TheSecondRunUsesTheCachedProbeAndTheTemplateAndSaysSo) {
  auto a = freeze("true");
  json first = run_ok(a, "first");
  json second = run_ok(a, "second");
  ASSERT_TRUE(first["grant"]["probe"].is_object()) << first["grant"].dump();
  EXPECT_EQ(first["grant"]["probe"]["cached"], false);
  EXPECT_NE(first["grant"]["probe"]["note"].get<std::string>().find("no entry"), std::string::npos)
      << first["grant"]["probe"].dump();
  EXPECT_EQ(second["grant"]["probe"]["cached"], true) << second["grant"]["probe"].dump();
  EXPECT_EQ(second["grant"]["probe"]["note"], "hit");
  EXPECT_EQ(second["grant"]["probe"]["key"], first["grant"]["probe"]["key"]);
  EXPECT_EQ(second["grant"]["enforced"], first["grant"]["enforced"]);
  EXPECT_EQ(second["state"], "built");

  ASSERT_EQ(first["owned_space"]["kind"], "filesystem") << first["owned_space"].dump();
  EXPECT_EQ(first["owned_space"]["made"].get<std::string>().rfind("mkfs.ext4", 0), 0u)
      << first["owned_space"].dump();
  EXPECT_EQ(second["owned_space"]["made"].get<std::string>().rfind("template ", 0), 0u)
      << second["owned_space"].dump();
}

TEST_F(RunProbeCache, AChangedBwrapBinaryIsProbedAgain) {
  auto a = freeze("true");
  json first = run_ok(a, "first");
  // A copy of bwrap with one byte more, where the job user can run it.
  auto bwrap = find_program("bwrap");
  ASSERT_TRUE(bwrap.ok());
  std::string copy_dir = "/tmp/sealrun-run-bwrap-copy-" + std::to_string(::getpid());
  fs::create_directories(copy_dir);
  fs::permissions(copy_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  {
    std::ifstream in(*bwrap, std::ios::binary);
    std::ofstream out(copy_dir + "/bwrap", std::ios::binary);
    out << in.rdbuf() << '\0';
  }
  // Readable too: a program its user cannot read runs undumpable, and bwrap then may not write
  // its own uid map.
  fs::permissions(copy_dir + "/bwrap", fs::perms::owner_all | fs::perms::group_read |
                                           fs::perms::group_exec | fs::perms::others_read |
                                           fs::perms::others_exec);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.push_back("SEALRUN_TEST_BWRAP=" + copy_dir + "/bwrap");
  json changed = run_ok(a, "changed", env);
  json again = run_ok(a, "again", env);
  fs::remove_all(copy_dir);

  EXPECT_EQ(changed["state"], "built");
  EXPECT_EQ(changed["grant"]["probe"]["cached"], false);
  EXPECT_NE(changed["grant"]["probe"]["note"].get<std::string>().find("the bwrap binary changed"),
            std::string::npos)
      << changed["grant"]["probe"].dump();
  EXPECT_NE(changed["grant"]["probe"]["key"], first["grant"]["probe"]["key"]);
  EXPECT_EQ(again["grant"]["probe"]["cached"], true) << again["grant"]["probe"].dump();
}

}  // namespace
}  // namespace sealrun::testing
