// SPDX-License-Identifier: Apache-2.0
// The source's timestamps through real runs (docs/admission.md, "Source timestamps"): every entry
// of /src at the admission's one time — 1980-01-02 for a plain tree, the commit time for git —
// equal to the job's $SOURCE_DATE_EPOCH and recorded in the receipt; a preserved tree whose host
// mtime changed after freezing is refused (exit 3) naming the entry; and the shape that broke
// release tarballs: a generated Makefile.in older on the host than its Makefile.am, built by make
// from `cp -a /src`, is not regenerated.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kRefused = 3;
constexpr const char* kPrintTimes =
    "for f in /src /src/input.txt /src/sub /src/sub/x.c; do stat -c %Y $f; done > /out/mtimes; "
    "stat -c %X /src/input.txt > /out/atime; echo $SOURCE_DATE_EPOCH > /out/epoch";

void set_mtime(const std::string& path, time_t sec) {
  struct timespec times[2] = {{sec, 0}, {sec, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

std::string times(time_t t) {
  std::string one = std::to_string(t) + "\n";
  return one + one + one + one;
}

class SourceMtimesRun : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    fs::create_directories(src_ + "/sub");
    write_text(src_ + "/sub/x.c", "int x;\n");
  }
  std::string out(const std::string& id, const std::string& name) {
    return read_text(state_ + "/results/" + id + "/out/" + name);
  }
  const json* source_view(const json& receipt) {
    for (const json& e : receipt["view"])
      if (e["kind"] == "source") return &e;
    return nullptr;
  }
};

TEST_F(SourceMtimesRun, EveryEntryOfATreeSourceHasTheOneTimeOfSourceDateEpoch) {
  set_mtime(src_ + "/input.txt", 1700000000);
  auto a = freeze(kPrintTimes);
  auto c = run(a, "fixed");
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(out("fixed", "mtimes"), times(315619200));
  EXPECT_EQ(out("fixed", "atime"), "315619200\n");
  EXPECT_EQ(out("fixed", "epoch"), "315619200\n");
  auto r = receipt("fixed");
  EXPECT_EQ(r["admission"]["source_date_epoch"], 315619200);
  const json* view = source_view(r);
  ASSERT_NE(view, nullptr) << r["view"].dump();
  EXPECT_EQ((*view)["mtimes"], "fixed");
  EXPECT_EQ((*view)["mtime_epoch"], 315619200);
  EXPECT_EQ(r["admission"]["inputs"][0]["annotations"]["mtimes"], "fixed");
  EXPECT_EQ(r["admission"]["inputs"][0]["annotations"]["mtime_epoch"], 315619200);
  bool checked = false;
  for (const json& v : r["verifications"])
    if (v["target"] == "source.mtimes")
      checked =
          v["result"] == "pass" && v["observed"] == "fixed at 315619200 (1980-01-02T00:00:00Z)";
  EXPECT_TRUE(checked) << r["verifications"].dump();

  // Either key of --set chooses the one time for both.
  auto b = freeze(kPrintTimes, {"source.mtime_epoch=1234567890"}, "b.json");
  ASSERT_EQ(run(b, "set").status.code, 0);
  EXPECT_EQ(out("set", "mtimes"), times(1234567890));
  EXPECT_EQ(out("set", "epoch"), "1234567890\n");
}

TEST_F(SourceMtimesRun, AGitSourceHasItsCommitTime) {
  std::string repo = dir_ / "repo";
  std::string script = "set -e; cp -a '" + src_ + "' '" + repo + "' && cd '" + repo +
                       "' && git init -q && git add -A && "
                       "GIT_COMMITTER_DATE='@1611111111 +0100' "
                       "git -c user.name=t -c user.email=t@example.invalid commit -qm one";
  ASSERT_EQ(std::system(script.c_str()), 0);
  std::vector<std::string> args = freeze_args("git.json");
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--source") args[i + 1] = repo;
  args.insert(args.end(), {"--env", "PATH=/usr/bin:/bin"});
  auto shell = busybox_tree_args();
  args.insert(args.end(), shell.begin(), shell.end());
  args.insert(args.end(), {"--", "/bin/sh", "-c", kPrintTimes});
  auto frozen = sealrun(args);
  ASSERT_EQ(frozen.status.code, 0) << frozen.err;
  Frozen a{dir_ / "git.json", frozen.out.substr(0, 64)};
  auto c = run(a, "git");
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(out("git", "mtimes"), times(1611111111));
  EXPECT_EQ(out("git", "epoch"), "1611111111\n");
}

TEST_F(SourceMtimesRun, APreservedTreeWhoseHostMtimeChangedIsRefusedNamingTheEntry) {
  set_mtime(src_ + "/sub/x.c", 1600000000);
  auto a = freeze(kPrintTimes, {}, "admission.json", {"--source-mtimes", "preserved"});
  auto c = run(a, "kept");
  ASSERT_EQ(c.status.code, 0) << c.err;
  std::string kept = out("kept", "mtimes");
  EXPECT_EQ(kept.substr(kept.size() - 11), "1600000000\n") << kept;  // /src/sub/x.c, the host's
  auto r = receipt("kept");
  const json* view = source_view(r);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ((*view)["mtimes"], "preserved");
  EXPECT_EQ((*view)["mtimes_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(r["admission"]["inputs"][0]["digest"]["sealrun_sourceMtimesV1"],
            (*view)["mtimes_sha256"]);

  set_mtime(src_ + "/sub/x.c", 1600000001);  // bytes unchanged: only the time moved
  auto refused = run(a, "moved");
  EXPECT_EQ(refused.status.code, kRefused) << refused.err;
  const std::string named = "sub/x.c: mtime 1600000001.000000000, expected 1600000000.000000000";
  EXPECT_NE(refused.err.find(named), std::string::npos) << refused.err;
  EXPECT_NE(receipt("moved")["reason"].get<std::string>().find(named), std::string::npos);
}

// Release tarballs ship Makefile.in generated from Makefile.am; a checkout or copy that writes
// Makefile.am later makes make "regenerate" it (automake, which is not there). Here the host has
// exactly that order; with the fixed times the job's copy is accepted as up to date, and with the
// host's times preserved the same build does try to regenerate (so the test can fail).
TEST_F(SourceMtimesRun, MakeFromACopyOfSrcDoesNotRegenerateWhatTheSourceShips) {
  write_text(src_ + "/Makefile",
             "all: Makefile.in\n\tcp Makefile.in /out/result\n"
             "Makefile.in: Makefile.am\n\techo 'automake-1.14: command not found' >&2; exit 127\n");
  write_text(src_ + "/Makefile.am", "am\n");
  write_text(src_ + "/Makefile.in", "generated\n");
  set_mtime(src_ + "/Makefile.in", 1600000000);
  set_mtime(src_ + "/Makefile.am", 1600003600);
  auto made = fixture_made_by("make_usr.sh");
  ASSERT_TRUE(made.ok()) << made.error().message();
  std::vector<std::string> tree = {"--tree", *made + "/make-usr=/usr"};
  const char* build = "cp -a /src /scratch/x && make -C /scratch/x";

  auto fixed = freeze(build, {}, "fixed.json", tree);
  auto c = run(fixed, "make-fixed");
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(out("make-fixed", "result"), "generated\n");

  tree.insert(tree.end(), {"--source-mtimes", "preserved"});
  auto preserved = freeze(build, {}, "preserved.json", tree);
  auto failed = run(preserved, "make-preserved");
  EXPECT_EQ(failed.status.code, 5) << failed.err;
  auto r = receipt("make-preserved");
  EXPECT_NE(r.dump().find("automake-1.14: command not found"), std::string::npos);
}

}  // namespace
}  // namespace sealrun::testing
