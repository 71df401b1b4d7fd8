// SPDX-License-Identifier: Apache-2.0
// Ordinary users (issue 25, item 5), through the built binary run as the unprivileged job user:
// a pinned file it cannot read is its own refusal — `run` and `admit check` exit 3 with "cannot
// read PATH as USER: ...", the receipt's verification says the same, `admit freeze` says it too —
// never a "pin mismatch" (which is what root, who reads the file, rightly sees: its mode changed).
// And `sealrun demo` as that user: what this host really gives an ordinary user, asserted exactly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kAdvice = ": run as root, or pin a tree you can read";

class UnreadableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "runs the binary as the job user: needs root";
    user_ = test_job_user_name();
    struct passwd* pw = ::getpwnam(user_.c_str());
    ASSERT_NE(pw, nullptr) << "no job user " << user_ << "; run .ci/setup";
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    work_ = dir_.str();
    // The job user's own directory (its parents are searchable: /tmp).
    ASSERT_EQ(::chmod(work_.c_str(), 0755), 0);
    ASSERT_EQ(::chown(work_.c_str(), uid_, gid_), 0);
  }

  // Makes `path` (a directory) with `files` below it, all the job user's.
  void make_tree(const std::string& path, const std::vector<std::string>& files) {
    fs::create_directories(path);
    for (const std::string& f : files) {
      fs::create_directories(fs::path(path + "/" + f).parent_path());
      write_text(path + "/" + f, f + "\n");
    }
    for (const auto& e : fs::recursive_directory_iterator(path))
      ASSERT_EQ(::lchown(e.path().c_str(), uid_, gid_), 0);
    ASSERT_EQ(::chown(path.c_str(), uid_, gid_), 0);
  }

  // build/sealrun with `args`, as the job user, from its own directory, with a clean environment.
  Captured as_user(const std::vector<std::string>& args, int64_t timeout_ms = 120000) {
    SpawnOptions o;
    o.argv = {"/usr/sbin/runuser",
              "-u",
              user_,
              "--",
              "env",
              "-i",
              "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
              "HOME=" + work_,
              std::string(SEALRUN_BINARY_DIR) + "/sealrun"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.cwd = work_;
    auto c = run_capture(o, timeout_ms);
    if (!c.ok()) {
      ADD_FAILURE() << c.error().message();
      return {};
    }
    return *c;
  }
  Captured as_root(const std::vector<std::string>& args) {
    SpawnOptions o;
    o.argv = {std::string(SEALRUN_BINARY_DIR) + "/sealrun"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    auto c = run_capture(o, 120000);
    if (!c.ok()) {
      ADD_FAILURE() << c.error().message();
      return {};
    }
    return *c;
  }

  std::string cannot_read(const std::string& path) const {
    return "cannot read " + path + " as " + user_ + kAdvice;
  }

  TempDir dir_;
  std::string work_, user_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

TEST_F(UnreadableTest, APinnedFileTheUserCannotReadIsItsOwnRefusal) {
  const std::string src = work_ + "/src", tc = work_ + "/tc", tree = work_ + "/tree",
                    state = work_ + "/state", adm = work_ + "/admission.json";
  make_tree(src, {"hello.txt"});
  make_tree(tc, {"bin/cc"});
  make_tree(tree, {"a", "sub/secret"});
  std::vector<std::string> freeze = {"admit",
                                     "freeze",
                                     "--out",
                                     adm,
                                     "--source",
                                     src,
                                     "--toolchain",
                                     tc,
                                     "--toolchain-mount",
                                     "/opt/toolchain",
                                     "--tree",
                                     tree + "=/data",
                                     "--state-dir",
                                     state,
                                     "--",
                                     "/bin/sh",
                                     "-c",
                                     "true"};
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  ASSERT_EQ(::chown(state.c_str(), uid_, gid_), 0);
  auto frozen = as_user(freeze);
  ASSERT_EQ(frozen.status.code, 0) << frozen.err;
  const std::string sha = frozen.out.substr(0, 64);

  const std::string secret = tree + "/sub/secret";
  ASSERT_EQ(::chmod(secret.c_str(), 0), 0);  // its owner may not read it either

  // run: refused (exit 3) for that reason, before anything ran.
  auto run = as_user({"run", adm, "--sha256", sha, "--state-dir", state, "--id", "unreadable"});
  EXPECT_EQ(run.status.code, 3) << run.out << run.err;
  EXPECT_NE(run.err.find("sealrun run: admission refused: " + cannot_read(secret) + "\n"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("pin mismatch"), std::string::npos) << run.err;
  // The receipt says the same, in the verification of the tree.
  // The receipt is where `run` printed it, on its last line.
  std::string printed = run.out;
  while (!printed.empty() && printed.back() == '\n') printed.pop_back();
  printed = printed.substr(printed.rfind('\n') + 1);
  json receipt = json::parse(read_text(printed), nullptr, false);
  ASSERT_FALSE(receipt.is_discarded()) << run.out;
  EXPECT_EQ(receipt["state"], "not_run");
  EXPECT_EQ(receipt["reason"], "admission refused: " + cannot_read(secret));
  bool seen = false;
  for (const json& v : receipt["verifications"]) {
    if (v["target"] != "trees:" + tree) continue;
    seen = true;
    EXPECT_EQ(v["result"], "fail");
    EXPECT_EQ(v["observed"], cannot_read(secret));
  }
  EXPECT_TRUE(seen) << receipt["verifications"].dump();

  // admit check: the same refusal, its check listed as unreadable.
  auto check = as_user({"admit", "check", adm, "--sha256", sha, "--state-dir", state});
  EXPECT_EQ(check.status.code, 3) << check.out << check.err;
  EXPECT_NE(check.out.find("unreadable trees:" + tree + "  expected "), std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("observed " + cannot_read(secret) + "\n"), std::string::npos)
      << check.out;
  EXPECT_EQ(check.err, "sealrun admit check: refused: " + cannot_read(secret) + "\n");

  // admit freeze of that tree: the same words, not the system call's.
  std::vector<std::string> again = freeze;
  again[3] = work_ + "/again.json";
  auto refused = as_user(again);
  EXPECT_EQ(refused.status.code, 1) << refused.out;
  EXPECT_EQ(refused.err, "sealrun admit freeze: " + cannot_read(secret) + "\n");
  EXPECT_FALSE(fs::exists(work_ + "/again.json"));

  // Root reads the file: for root the tree did change (a mode), and that is a mismatch.
  auto by_root =
      as_root({"admit", "check", adm, "--sha256", sha, "--state-dir", work_ + "/no-state"});
  EXPECT_EQ(by_root.status.code, 3) << by_root.out;
  EXPECT_EQ(by_root.err, "sealrun admit check: refused: pin mismatch: trees:" + tree + "\n");
}

// On this host (cgroup v1, no delegation, no systemd user manager) an ordinary user cannot have
// the memory and process limits the demo requires: one line says so before anything is hashed
// or frozen, and the demo exits 4.
TEST_F(UnreadableTest, TheDemoAsAnOrdinaryUserSaysInOneLineWhatIsMissing) {
  const std::string out = work_ + "/demo";
  auto demo = as_user({"demo", "--out", out});
  EXPECT_EQ(demo.status.code, 4) << demo.out << demo.err;
  EXPECT_EQ(demo.out, "");
  EXPECT_EQ(demo.err, "sealrun demo: memory, process_count are not enforceable as " + user_ +
                          " here (a resource group needs root, or a cgroup delegated to " + user_ +
                          "): run as root, or under a systemd user manager with a delegated "
                          "cgroup (cgroup v2), or pass --mode report-only to build with the "
                          "shortfall recorded\n");
  EXPECT_FALSE(fs::exists(out + "/admission.json"));
}

// What the ordinary user's demo pins is enough to build the example with the host's compiler:
// with the shortfall recorded instead of refused, it ends `built`, from the compiler's own
// directories (no /usr whole, nothing learned).
TEST_F(UnreadableTest, TheDemoAsAnOrdinaryUserBuildsFromTheCompilersDirectories) {
  const std::string out = work_ + "/demo";
  auto demo = as_user({"demo", "--out", out, "--mode", "report-only", "--json"}, 900000);
  ASSERT_EQ(demo.status.code, 0) << demo.out << demo.err;
  json summary = json::parse(demo.out, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << demo.out;
  EXPECT_EQ(summary["state"], "built");
  EXPECT_EQ(summary["learned"], false);
  json adm = json::parse(read_text(out + "/admission.json"), nullptr, false);
  ASSERT_FALSE(adm.is_discarded());
  std::vector<std::string> trees;
  for (const json& t : adm["trees"]) trees.push_back(t["host_path"]);
  const std::string driver_dir = fs::canonical("/usr/bin/gcc").parent_path().string();
  EXPECT_NE(std::find(trees.begin(), trees.end(), driver_dir), trees.end()) << adm["trees"];
  EXPECT_EQ(std::find(trees.begin(), trees.end(), "/usr"), trees.end());
  EXPECT_NE(adm["toolchain"]["root"], "/usr");
  json receipt = json::parse(read_text(summary["receipt_path"]), nullptr, false);
  ASSERT_FALSE(receipt.is_discarded());
  EXPECT_EQ(receipt["grant"]["mode"], "report-only");
  EXPECT_EQ(receipt["exit"], 0);
}

}  // namespace
}  // namespace sealrun::testing
