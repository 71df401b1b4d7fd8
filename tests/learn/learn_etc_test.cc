// SPDX-License-Identifier: Apache-2.0
// The host's churn is not the job's (docs/learning.md, "Never learned"), end to end as root with
// real bwrap and fanotify: a learned admission whose command reads the user and host databases
// pins none of the six generated /etc files, and a `useradd` on the host between two of its runs
// changes nothing (both built, the same outputs); `--learn-exclude` leaves a path out and says how
// much, and a path that is not absolute and normalised is a usage error before anything runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "fingerprint/file_hash.h"
#include "tests/learn/learn_run_test.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kGenerated[] = {"/etc/passwd",   "/etc/group",         "/etc/hosts",
                                      "/etc/hostname", "/etc/nsswitch.conf", "/etc/resolv.conf"};

class LearnEtcTest : public LearnRunTest {};

// Runs a host command; the test fails when it does.
void host(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  auto r = run_capture(o, 60000);
  ASSERT_TRUE(r.ok()) << argv[0];
  ASSERT_TRUE(r->status.success()) << argv[0] << " " << argv.back() << ": " << r->err;
}

// A throwaway host user, removed when the test ends however it ends.
struct ThrowawayUser {
  std::string name = "srtmp" + std::to_string(::getpid() % 100000);
  ThrowawayUser() { host({"/usr/sbin/useradd", "--no-create-home", "--system", name}); }
  ~ThrowawayUser() {
    SpawnOptions o;
    o.argv = {"/usr/sbin/userdel", name};
    (void)run_capture(o, 60000);
  }
};

std::string host_sha256(const std::string& path) {
  auto d = hash_file(path);
  return d.ok() ? d->sha256 : "error";
}

TEST_F(LearnEtcTest, AUseraddBetweenTwoRunsOfALearnedAdmissionChangesNothing) {
  auto c = learn(
      "{ id -un; getent passwd $(id -u); getent group $(id -g); cat /etc/hosts /etc/hostname; }"
      " > /out/who",
      "who.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "who.json");
  for (const json& f : doc.at("host_files"))
    for (const char* g : kGenerated) EXPECT_NE(f.at("path"), g) << "learned from the host";
  for (const json& l : doc.value("host_links", json::array()))
    for (const char* g : kGenerated) EXPECT_NE(l.at("path"), g) << "learned from the host";
  EXPECT_TRUE(json::parse(c.out).at("excluded").empty()) << c.out;
  Frozen a{dir_ / "who.json", json::parse(c.out).at("sha256")};

  auto first = run(a, "who-1");
  ASSERT_EQ(first.status.code, 0) << first.out << first.err;
  std::string before = host_sha256("/etc/passwd");
  {
    ThrowawayUser user;
    ASSERT_NE(host_sha256("/etc/passwd"), before) << "useradd changed nothing on the host";
    auto second = run(a, "who-2");
    ASSERT_EQ(second.status.code, 0) << second.out << second.err;
  }
  json r1 = receipt("who-1"), r2 = receipt("who-2");
  EXPECT_EQ(r1["state"], "built");
  EXPECT_EQ(r2["state"], "built");
  EXPECT_EQ(r1["outputs"], r2["outputs"]);
  // What the job read is the job user, by its own generated files.
  std::string who = read_text(state_ + "/results/who-1/out/who");
  const std::string user = test_job_user_name();
  EXPECT_EQ(who.rfind(user + "\n" + user + ":x:", 0), 0u) << who;
  EXPECT_NE(who.find("127.0.1.1\tsealrun\n"), std::string::npos) << who;
  EXPECT_NE(who.find(":/scratch:/bin/sh\n"), std::string::npos) << who;
  size_t generated = 0;
  for (const json& v : r2["view"]) generated += v["kind"] == "generated" ? 1 : 0;
  EXPECT_EQ(generated, 6u) << r2["view"].dump();
}

TEST_F(LearnEtcTest, ALearnExcludeLeavesAPathOutAndSaysHowMuch) {
  // The job reads the excluded file when it is there, as a build reads an optional input: the
  // learning run sees the host's, the proving run (the learned view) does not, and both build.
  auto c = learn("cat /etc/os-release > /dev/null; cat /etc/debian_version 2>/dev/null || true",
                 "ex.json",
                 {"--learn-exclude", "/etc/debian_version", "--learn-exclude", "/etc/nothing"});
  ASSERT_EQ(c.status.code, 0) << c.err;
  json printed = json::parse(c.out);
  EXPECT_EQ(printed.at("excluded"),
            json::parse(R"([{"path": "/etc/debian_version", "files": 1, "links": 0, "dirs": 0},
                            {"path": "/etc/nothing", "files": 0, "links": 0, "dirs": 0}])"));
  json doc = read_json(dir_ / "ex.json");
  std::set<std::string> files;
  for (const json& f : doc.at("host_files")) files.insert(f.at("path").get<std::string>());
  EXPECT_EQ(files.count("/etc/debian_version"), 0u);
  EXPECT_EQ(files.count(fs::canonical("/etc/os-release").string()), 1u)
      << "what is not excluded is still learned";
}

// A job that needs what was excluded fails its proving run, which names the path: the exclusion
// is honest, never a closure that builds only on the learning host.
TEST_F(LearnEtcTest, AJobThatNeedsAnExcludedPathFailsItsProvingRunNamingIt) {
  auto c = learn("cat /etc/debian_version > /dev/null", "needs.json",
                 {"--learn-exclude", "/etc/debian_version"});
  EXPECT_EQ(c.status.code, 1) << c.err;
  EXPECT_NE(c.err.find("the learned view lacks: /etc/debian_version"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "needs.json"));
}

TEST_F(LearnEtcTest, ANonNormalisedLearnExcludeIsAUsageErrorBeforeLearning) {
  for (const char* bad : {"etc/ssl", "/etc/../ssl", "/etc/ssl/"}) {
    auto c = learn("echo learning-ran >&2", "bad.json", {"--learn-exclude", bad});
    EXPECT_EQ(c.status.code, 2) << bad << ": " << c.err;
    EXPECT_NE(c.err.find("--learn-exclude"), std::string::npos) << c.err;
    EXPECT_EQ(c.err.find("learning-ran"), std::string::npos) << "the learning run started";
    EXPECT_FALSE(fs::exists(dir_ / "bad.json"));
  }
  auto without = sealrun({"admit", "freeze", "--out", dir_ / "plain.json", "--source", src_,
                          "--toolchain", toolchain_, "--learn-exclude", "/etc/ssl", "--", "true"});
  EXPECT_EQ(without.status.code, 2) << without.err;
  EXPECT_FALSE(fs::exists(dir_ / "plain.json"));
}

}  // namespace
}  // namespace sealrun::testing
