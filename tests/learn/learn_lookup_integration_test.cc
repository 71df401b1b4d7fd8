// SPDX-License-Identifier: Apache-2.0
// `admit freeze --learn` and what a command only looks at, end to end through the built binary as
// root (real bwrap as the job user, real seccomp traces and ptrace, real fanotify): a file that is
// only stat'ed, tested for or looked for and not found behaves in a later `sealrun run` of the
// learned admission as it did while learning; a listing with each entry stat'ed is the same; a
// pinned tree wins over the closure; and a proving run that does not build writes nothing and
// names what the learned view lacked. Expected values come from the host itself (stat, ls).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "tests/learn/learn_run_test.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kLicenses = "/usr/share/common-licenses";

class LearnLookupTest : public LearnRunTest {
 public:
  void SetUp() override {
    LearnRunTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(fs::is_regular_file(std::string(kLicenses) + "/GPL-3"))
        << "base-files' licenses are on every Debian host";
  }

  // The job's stdout in a `sealrun run` of what `learned` wrote to `name`.
  std::string run_stdout(const Captured& learned, const std::string& name, const std::string& id) {
    Frozen a{dir_ / name, json::parse(learned.out).at("sha256")};
    auto r = run(a, id);
    EXPECT_EQ(r.status.code, 0) << r.out << r.err;
    return receipt(id)["commands"][0]["stdout"]["tail"];
  }

  static std::string host_says(const std::string& script) {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", script};
    auto r = run_capture(o, 30000);
    EXPECT_TRUE(r.ok() && r->status.success()) << script;
    return r.ok() ? r->out : "";
  }
};

// Nothing here opens GPL-3, Apache-2.0 or gzip: `test -f` and `[ -x ]` are stat/access, `stat -c`
// is statx. Without lookups recorded the learned view lacks all three and the output differs.
TEST_F(LearnLookupTest, WhatWasOnlyLookedAtIsThereInTheLearnedView) {
  const std::string script = std::string("test -f ") + kLicenses +
                             "/GPL-3 && echo gpl; stat -c %s " + kLicenses +
                             "/Apache-2.0; [ -x /usr/bin/gzip ] && echo gzip; test -e " +
                             kLicenses + "/no-such-license || echo absent";
  auto c = learn(script, "looked.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json printed = json::parse(c.out);
  EXPECT_GT(printed.at("lookups").get<int>(), 0);
  EXPECT_TRUE(printed.contains("prove_ms"));
  json doc = read_json(dir_ / "looked.json");
  std::set<std::string> files;
  for (const json& f : doc.at("host_files")) files.insert(f.at("path"));
  for (const std::string& p :
       {std::string(kLicenses) + "/GPL-3", std::string(kLicenses) + "/Apache-2.0",
        std::string("/usr/bin/gzip")})
    EXPECT_EQ(files.count(p), 1u) << p << " was only looked at, and is pinned by content";
  EXPECT_EQ(files.count(std::string(kLicenses) + "/no-such-license"), 0u);
  const std::string expected = host_says(script);
  EXPECT_EQ(expected, "gpl\n" + host_says(std::string("stat -c %s ") + kLicenses + "/Apache-2.0") +
                          "gzip\nabsent\n");
  EXPECT_EQ(run_stdout(c, "looked.json", "looked"), expected);
}

// `ls -l` lists the directory and lstat()s each entry: every entry is pinned (files by content,
// links by target), so the listing in the learned view is the host's: kinds, modes, sizes, names
// and link targets. (Owners read differently in the job's user namespace, and bwrap makes the
// links anew, with their own times, so those columns are left out.)
TEST_F(LearnLookupTest, ALongListingIsTheSameInTheLearnedView) {
  const std::string script = std::string("ls -l ") + kLicenses + " | awk '{print $1, $5, $NF}'";
  auto c = learn(script, "listed.json");
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "listed.json");
  EXPECT_TRUE(doc.at("host_dirs").get<std::set<std::string>>().count(kLicenses))
      << doc.at("host_dirs").dump();
  std::string out = run_stdout(c, "listed.json", "listed");
  EXPECT_EQ(out, host_says(script));
  EXPECT_NE(out.find("GPL-3"), std::string::npos);
  // The directory is a view entry of its own (kind dir), as the receipt records it.
  const json view = receipt("listed")["view"];
  json entry;
  for (const json& v : view)
    if (v.at("job_path").get<std::string>() == kLicenses) entry = v;
  EXPECT_EQ(entry.value("kind", ""), "dir") << view.dump();
  EXPECT_EQ(entry.value("pin", ""), "directory") << entry.dump();
}

// A tree pinned with --tree wins: the learning run does not record inside it, nothing at or below
// it is in the closure, and the learned admission runs (it used to fail after the whole learning
// run: "host_files[N] overlaps trees[0].job_path").
TEST_F(LearnLookupTest, APinnedTreeWinsOverTheLearnedClosure) {
  const std::string script = std::string("cat ") + kLicenses + "/GPL-3 > /dev/null && test -f " +
                             kLicenses + "/BSD && ls " + kLicenses + " > /dev/null && echo ok";
  auto c = learn(script, "tree.json", {"--tree", kLicenses});
  ASSERT_EQ(c.status.code, 0) << c.err;
  json doc = read_json(dir_ / "tree.json");
  ASSERT_EQ(doc.at("trees").size(), 1u);
  for (const char* field : {"host_files", "host_links"})
    for (const json& e : doc.value(field, json::array()))
      EXPECT_NE(e.at("path").get<std::string>().rfind(kLicenses, 0), 0u) << field << " " << e;
  for (const json& d : doc.value("host_dirs", json::array()))
    EXPECT_NE(d.get<std::string>().rfind(kLicenses, 0), 0u) << d;
  EXPECT_EQ(run_stdout(c, "tree.json", "tree"), "ok\n");
}

// A command whose behaviour depends on a directory's listing — names only, which getdents gives
// and nothing pins (only what is pinned is listed in the learned view): while learning the host's
// listing holds GPL-3 and the license is not read; in the proving run the listing is empty, so it
// cats GPL-3, which the learned view does not have. The proving run fails, the admission is not
// written, and the message names the file (the proving run traces opens).
TEST_F(LearnLookupTest, AProvingRunThatFailsWritesNothingAndNamesTheMissingPath) {
  // `cat /dev/null` first: cat itself is learned (the proving run must lack the license only).
  const std::string script = std::string("cat /dev/null; if ls ") + kLicenses +
                             " | grep -qx GPL-3; then echo listed; else cat " + kLicenses +
                             "/GPL-3; fi";
  auto c = learn(script, "unproven.json");
  EXPECT_EQ(c.status.code, 1) << c.out << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "unproven.json"));
  EXPECT_NE(c.err.find("the proving run"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find(std::string("lacks: ") + kLicenses + "/GPL-3"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("No such file or directory"), std::string::npos) << "cat's own word\n"
                                                                        << c.err;
}

// Checked before the learning run: an --out that exists (without --force) and a tree that
// overlaps the toolchain's place never start the command.
TEST_F(LearnLookupTest, WhatCanBeCheckedBeforeLearningIsCheckedFirst) {
  write_text(dir_ / "exists.json", "{}");
  auto c = learn("touch /out/ran", "exists.json");
  EXPECT_EQ(c.status.code, 1);
  EXPECT_NE(c.err.find("exists"), std::string::npos) << c.err;
  auto t = learn("echo ran-the-command", "overlap.json",
                 {"--tree", std::string(kLicenses) + "=/opt/toolchain/x"});
  EXPECT_EQ(t.status.code, 1);
  EXPECT_NE(t.err.find("overlaps"), std::string::npos) << t.err;
  EXPECT_EQ(t.err.find("ran-the-command"), std::string::npos) << "the command never ran";
  EXPECT_FALSE(fs::exists(dir_ / "overlap.json"));
}

}  // namespace
}  // namespace sealrun::testing
