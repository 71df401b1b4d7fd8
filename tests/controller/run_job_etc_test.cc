// SPDX-License-Identifier: Apache-2.0
// The job's own /etc under bwrap (docs/view.md, "The job's /etc"), through the real binary: the
// generated files win over a pinned --tree /etc; an older admission that pinned the host's
// /etc/passwd (stale now) still runs, with the generated file in its place; and `rebuild --vary
// hostname,user_id` gives a job whose generated /etc/hostname and /etc/passwd follow the varied
// values. (That the receipt's view[] pins the six files with the SHA-256 of what the job read is
// in run_view_test.cc, TheReceiptsViewIsTheJobsMountinfo.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "fingerprint/sha256.h"
#include "tests/controller/run_test_support.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using JobEtcTest = RunTest;

std::map<std::string, json> view_by_path(const json& receipt) {
  std::map<std::string, json> out;
  for (const json& e : receipt["view"]) out[e["job_path"].get<std::string>()] = e;
  return out;
}

// The job user's line as the job's /etc/passwd has it (the tests run as root: the job user).
std::string job_user_line(const std::string& passwd) {
  size_t at = passwd.find("\n") + 1;  // after root's
  return passwd.substr(at, passwd.find('\n', at) - at);
}

TEST_F(JobEtcTest, TheGeneratedFilesWinOverAPinnedEtcTree) {
  std::string tree = dir_ / "etc-tree";
  fs::create_directories(tree);
  write_text(tree + "/passwd", "tree-passwd\n");
  write_text(tree + "/os-release", "tree\n");  // no hostname: bwrap cannot bind over nothing
  Frozen a = freeze(
      "cat /etc/passwd > /out/passwd; cat /etc/os-release > /out/os;"
      " if [ -e /etc/hostname ]; then echo yes; else echo no; fi > /out/hostname",
      {}, "tree.json", {"--tree", tree + "=/etc"});
  auto c = run(a, "tree", {"--mechanism", "bwrap"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  std::string out = state_ + "/results/tree/out";
  std::string passwd = read_text(out + "/passwd");
  EXPECT_EQ(passwd.rfind("root:x:0:0:", 0), 0u) << passwd;
  EXPECT_EQ(passwd.find("tree-passwd"), std::string::npos) << passwd;
  EXPECT_EQ(read_text(out + "/os"), "tree\n");
  EXPECT_EQ(read_text(out + "/hostname"), "no\n") << "the tree has none, and that is what it pins";
  auto view = view_by_path(receipt("tree"));
  EXPECT_EQ(view["/etc"]["kind"], "tree");
  EXPECT_EQ(view["/etc/passwd"]["kind"], "generated");
  EXPECT_EQ(view["/etc/passwd"]["pin"], "sha256:" + sha256_hex(passwd));
  EXPECT_EQ(view.count("/etc/hostname"), 0u);
}

TEST_F(JobEtcTest, AnOlderAdmissionsPinOfTheHostsPasswdIsLeftOutNotRefused) {
  Frozen base = freeze("cat /etc/passwd > /out/passwd", {}, "base.json");
  std::ifstream in(base.path);
  json doc = json::parse(in);
  // As an older `--learn` wrote it: the host's /etc/passwd pinned, and changed since.
  doc["host_files"] = json::array({{{"path", "/etc/passwd"}, {"sha256", std::string(64, '0')}}});
  std::string bytes = doc.dump(2) + "\n";
  write_text(dir_ / "old.json", bytes);
  auto c = run({dir_ / "old.json", sha256_hex(bytes)}, "old", {"--mechanism", "bwrap"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  json r = receipt("old");
  EXPECT_EQ(r["state"], "built");
  auto view = view_by_path(r);
  EXPECT_EQ(view["/etc/passwd"]["kind"], "generated");
  EXPECT_EQ(view["/etc/passwd"]["pin"],
            "sha256:" + sha256_hex(read_text(state_ + "/results/old/out/passwd")));
}

TEST_F(JobEtcTest, ARebuildsVariedHostnameAndUidAreWhatTheGeneratedFilesSay) {
  Frozen a = freeze(
      "cat /etc/hostname > /out/hostname; id -u > /out/uid; cat /etc/passwd > /out/passwd;"
      " grep \"$(hostname)\\$\" /etc/hosts > /out/hosts",
      {}, "vary.json");
  auto c = run(a, "orig", {"--mechanism", "bwrap"});
  ASSERT_EQ(c.status.code, 0) << c.out << c.err;
  auto rebuilt =
      sealrun({"rebuild", receipt_path("orig"), "--admission", a.path, "--state-dir", state_,
               "--mechanism", "bwrap", "--vary", "hostname,user_id", "--id", "varied"});
  // The outputs differ (that is what the variations are for): exit 0 or the "differ" code.
  ASSERT_TRUE(fs::exists(state_ + "/results/varied/out/hostname")) << rebuilt.out << rebuilt.err;
  std::string orig = state_ + "/results/orig/out", varied = state_ + "/results/varied/out";
  EXPECT_EQ(read_text(orig + "/hostname"), "sealrun\n");
  EXPECT_EQ(read_text(varied + "/hostname"), "sealrun-rebuild\n");
  EXPECT_EQ(read_text(varied + "/hosts"), "127.0.1.1\tsealrun-rebuild\n");
  EXPECT_EQ(read_text(varied + "/uid"), "4242\n");
  const std::string user = test_job_user_name();
  EXPECT_EQ(job_user_line(read_text(varied + "/passwd")),
            user + ":x:4242:4242:" + user + ":/scratch:/bin/sh");
  std::string uid = read_text(orig + "/uid");
  uid.pop_back();
  EXPECT_EQ(job_user_line(read_text(orig + "/passwd")),
            user + ":x:" + uid + ":" + uid + ":" + user + ":/scratch:/bin/sh");
  EXPECT_EQ(view_by_path(receipt("varied"))["/etc/passwd"]["pin"],
            "sha256:" + sha256_hex(read_text(varied + "/passwd")));
}

}  // namespace
}  // namespace sealrun::testing
