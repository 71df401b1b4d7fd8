// SPDX-License-Identifier: Apache-2.0
// The source's timestamps (docs/admission.md, "Source timestamps"), without a run: reading
// source.mtimes / mtime_epoch / mtimes_list / mtimes_sha256 beside source_date_epoch (defaults,
// older admissions, conflicts, "preserved" refused for git), the canonical round trip, freezing
// (the default epoch of a tree and of a git commit, --set of either key, --source-mtimes), the
// mtimes listing and its spelling, stamping a tree, the snapshot keeping host mtimes, and
// verification on a run's copy (stamped, or a changed host mtime refused by name).
#include "fingerprint/source_mtimes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "admission/admitted.h"
#include "admission/document.h"
#include "admission/freeze.h"
#include "fingerprint/source_snapshot.h"
#include "tests/support/temp_dir.h"

namespace sealrun::admission {
namespace {

using nlohmann::json;
using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');

json doc_with_source(json source) {
  return {{"schema", "sealrun-admission-v1"},
          {"command", {{"argv", {"/usr/bin/make"}}}},
          {"source", std::move(source)},
          {"toolchain", {{"root", "/opt/tc"}, {"tree_sha256", kC}}}};
}

json tree_source() {
  return {{"kind", "tree"},
          {"path", "/srv/src"},
          {"manifest", {{{"path", "a.c"}, {"bytes", 3}, {"sha256", kA}}}},
          {"manifest_sha256", kB}};
}

json git_source() {
  json s = tree_source();
  s["kind"] = "git";
  s["commit"] = std::string(40, 'd');
  s["tree"] = std::string(40, 'e');
  return s;
}

std::vector<MtimeEntry> sample_list() {
  return {{".", {1700000000, 5}}, {"a.c", {1600000000, 123456789}}, {"sub", {1700000001, 0}}};
}

json list_json(const std::vector<MtimeEntry>& list) {
  json out = json::array();
  for (const auto& e : list) out.push_back({{"path", e.path}, {"mtime", format_mtime(e.mtime)}});
  return out;
}

json preserved_source() {
  json s = tree_source();
  s["mtimes"] = "preserved";
  s["mtimes_list"] = list_json(sample_list());
  s["mtimes_sha256"] = mtimes_digest(sample_list());
  return s;
}

std::string error_of(const json& doc) {
  auto r = parse_admission_json(doc);
  return r.ok() ? std::string("(parsed)") : r.error().message();
}

TEST(SourceMtimesParse, AnAdmissionWithoutTheKeysReadsAsFixedAtItsSourceDateEpoch) {
  json j = doc_with_source(tree_source());
  auto zero = parse_admission_json(j);
  ASSERT_TRUE(zero.ok()) << zero.error().message();
  EXPECT_EQ(zero->source.mtimes, SourceMtimes::kFixed);
  EXPECT_EQ(zero->source_date_epoch, 0);

  j["source_date_epoch"] = 1700000000;
  auto old = parse_admission_json(j);
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old->source.mtimes, SourceMtimes::kFixed);
  EXPECT_EQ(old->source_date_epoch, 1700000000);
  // Written back with both keys, equal; and that reads back as itself.
  json canonical = admission_to_json(*old);
  EXPECT_EQ(canonical["source"]["mtimes"], "fixed");
  EXPECT_EQ(canonical["source"]["mtime_epoch"], 1700000000);
  EXPECT_EQ(canonical["source_date_epoch"], 1700000000);
  std::string bytes = canonical_admission_bytes(*old);
  auto again = parse_admission_bytes(bytes);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), bytes);
}

TEST(SourceMtimesParse, MtimeEpochAloneSetsSourceDateEpochAndEqualValuesAgree) {
  json s = git_source();
  s["mtime_epoch"] = 1234567890;
  auto alone = parse_admission_json(doc_with_source(s));
  ASSERT_TRUE(alone.ok()) << alone.error().message();
  EXPECT_EQ(alone->source_date_epoch, 1234567890);

  json both = doc_with_source(s);
  both["source_date_epoch"] = 1234567890;
  EXPECT_TRUE(parse_admission_json(both).ok()) << error_of(both);
}

TEST(SourceMtimesParse, RefusalsNameTheFieldAndWhy) {
  struct Case {
    const char* name;
    json doc;
    const char* expected;
  };
  json differ = doc_with_source([] {
    json s = tree_source();
    s["mtime_epoch"] = 5;
    return s;
  }());
  differ["source_date_epoch"] = 6;
  json git_preserved = git_source();
  git_preserved["mtimes"] = "preserved";
  git_preserved["mtimes_list"] = list_json(sample_list());
  git_preserved["mtimes_sha256"] = mtimes_digest(sample_list());
  json bundle_preserved = git_preserved;
  bundle_preserved["kind"] = "bundle";
  bundle_preserved["path_sha256"] = kA;
  json no_list = preserved_source();
  no_list.erase("mtimes_list");
  json with_epoch = preserved_source();
  with_epoch["mtime_epoch"] = 1;
  json fixed_with_list = tree_source();
  fixed_with_list["mtimes_list"] = list_json(sample_list());
  json wrong_digest = preserved_source();
  wrong_digest["mtimes_sha256"] = kA;
  json unsorted = preserved_source();
  std::swap(unsorted["mtimes_list"][0], unsorted["mtimes_list"][1]);
  json bad_time = preserved_source();
  bad_time["mtimes_list"][1]["mtime"] = "1600000000.5";
  json bad_mode = tree_source();
  bad_mode["mtimes"] = "host";
  json negative = tree_source();
  negative["mtime_epoch"] = -1;
  const Case cases[] = {
      {"differ", differ,
       "source.mtime_epoch: 5 differs from source_date_epoch (6); they are one value"},
      {"git_preserved", doc_with_source(git_preserved),
       "source.mtimes: \"preserved\" needs a plain tree source, not kind \"git\": git stores no "
       "mtimes"},
      {"bundle_preserved", doc_with_source(bundle_preserved), "not kind \"bundle\""},
      {"no_list", doc_with_source(no_list), "source.mtimes_list: missing (required with"},
      {"with_epoch", doc_with_source(with_epoch),
       "source.mtime_epoch: only with source.mtimes \"fixed\""},
      {"fixed_with_list", doc_with_source(fixed_with_list),
       "source.mtimes_list: only with source.mtimes \"preserved\""},
      {"wrong_digest", doc_with_source(wrong_digest),
       "source.mtimes_sha256: does not match source.mtimes_list"},
      {"unsorted", doc_with_source(unsorted), "source.mtimes_list[1].path: \".\" is out of order"},
      {"bad_time", doc_with_source(bad_time),
       "source.mtimes_list[1].mtime: \"1600000000.5\" is not SECONDS.NANOSECONDS"},
      {"bad_mode", doc_with_source(bad_mode),
       "source.mtimes: expected \"fixed\" or \"preserved\", got \"host\""},
      {"negative", doc_with_source(negative), "source.mtime_epoch: expected an integer between 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_NE(error_of(c.doc).find(c.expected), std::string::npos) << error_of(c.doc);
  }
}

TEST(SourceMtimesParse, PreservedRoundTripsThroughTheCanonicalBytes) {
  json j = doc_with_source(preserved_source());
  j["source_date_epoch"] = 99;
  auto doc = parse_admission_json(j);
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->source.mtimes, SourceMtimes::kPreserved);
  ASSERT_EQ(doc->source.mtimes_list.size(), 3u);
  EXPECT_EQ(doc->source.mtimes_list[1].mtime.tv_nsec, 123456789);
  EXPECT_EQ(doc->source_date_epoch, 99);
  std::string bytes = canonical_admission_bytes(*doc);
  EXPECT_EQ(bytes.find("mtime_epoch"), std::string::npos);
  auto again = parse_admission_bytes(bytes);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(canonical_admission_bytes(*again), bytes);
  EXPECT_EQ(again->source.mtimes_sha256, mtimes_digest(sample_list()));
}

TEST(SourceMtimesListing, SpellingIsOneLinePerEntryAndParsesBack) {
  EXPECT_EQ(mtimes_listing(sample_list()),
            ".\t1700000000.000000005\na.c\t1600000000.123456789\nsub\t1700000001.000000000\n");
  struct Case {
    const char* text;
    bool good;
  };
  const Case cases[] = {{"0.000000000", true},
                        {"1700000000.123456789", true},
                        {"-1.999999999", true},
                        {"1.5", false},
                        {"1.0000000000", false},
                        {"01.000000000", false},
                        {".000000000", false},
                        {"-0.000000001", false},
                        {"1e3.000000000", false},
                        {"1700000000.12345678x", false},
                        {"", false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto t = parse_mtime(c.text);
    EXPECT_EQ(t.has_value(), c.good);
    if (t) {
      EXPECT_EQ(format_mtime(*t), c.text);
    }
  }
  auto changed = sample_list();
  changed[1].mtime.tv_sec += 3600;
  EXPECT_EQ(first_mtime_difference(sample_list(), changed).value_or(""),
            "a.c: mtime 1600003600.123456789, expected 1600000000.123456789");
  changed = sample_list();
  changed.erase(changed.begin() + 2);
  EXPECT_EQ(first_mtime_difference(sample_list(), changed).value_or(""),
            "sub: absent (expected mtime 1700000001.000000000)");
  EXPECT_FALSE(first_mtime_difference(sample_list(), sample_list()).has_value());
}

void set_mtime(const std::string& path, time_t sec, long nsec = 0) {
  struct timespec times[2] = {{sec, nsec}, {sec, nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

class SourceMtimesTree : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_ / "src";
    std::filesystem::create_directories(src_ + "/sub/deeper");
    write_text(src_ + "/Makefile.am", "am\n");
    write_text(src_ + "/Makefile.in", "in\n");
    write_text(src_ + "/sub/deeper/x.c", "x\n");
    set_mtime(src_ + "/Makefile.in", 1600000000, 111);
    set_mtime(src_ + "/Makefile.am", 1600003600, 222);  // newer than what is made from it
    set_mtime(src_ + "/sub/deeper/x.c", 1500000000);
    set_mtime(src_ + "/sub/deeper", 1500000001);
    set_mtime(src_ + "/sub", 1500000002);
    set_mtime(src_, 1500000003);
    request_.out = dir_ / "admission.json";
    request_.source = src_;
    request_.toolchain = dir_ / "tc";
    request_.toolchain_mount = "/opt/tc";
    std::filesystem::create_directories(request_.toolchain);
    request_.argv = {"/bin/true"};
  }

  Result<AdmissionDocument> frozen() {
    request_.force = true;
    auto r = freeze_admission(request_);
    if (!r.ok()) return std::move(r).error();
    sha256_ = r->sha256;
    return r->document;
  }

  TempDir dir_;
  std::string src_;
  std::string sha256_;
  FreezeRequest request_;
};

TEST_F(SourceMtimesTree, ATreeIsFrozenFixedAt1980UnlessASetChoosesEitherKey) {
  auto doc = frozen();
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->source.mtimes, SourceMtimes::kFixed);
  EXPECT_EQ(doc->source_date_epoch, 315619200);
  EXPECT_NE(read_text(request_.out).find("\"mtime_epoch\": 315619200"), std::string::npos);

  for (const char* key : {"source_date_epoch", "source.mtime_epoch"}) {
    SCOPED_TRACE(key);
    request_.sets = {std::string(key) + "=1700000000"};
    auto set = frozen();
    ASSERT_TRUE(set.ok()) << set.error().message();
    EXPECT_EQ(set->source_date_epoch, 1700000000);
    json written = json::parse(read_text(request_.out));
    EXPECT_EQ(written["source"]["mtime_epoch"], 1700000000);
    EXPECT_EQ(written["source_date_epoch"], 1700000000);
  }
}

TEST_F(SourceMtimesTree, ADraftWithTwoDifferentTimesIsRefusedNamingBoth) {
  write_text(dir_ / "draft.json",
             R"({"source_date_epoch": 10, "source": {"kind": "tree", "mtime_epoch": 20}})");
  request_.draft = dir_ / "draft.json";
  auto doc = frozen();
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message().find("source_date_epoch (10) and source.mtime_epoch (20) differ"),
            std::string::npos)
      << doc.error().message();
  // A --set of either settles it for both.
  request_.sets = {"source.mtime_epoch=30"};
  auto settled = frozen();
  ASSERT_TRUE(settled.ok()) << settled.error().message();
  EXPECT_EQ(settled->source_date_epoch, 30);
}

TEST_F(SourceMtimesTree, PreservedPinsTheHostMtimesAndACheckNamesTheOneThatChanged) {
  request_.source_mtimes = "preserved";
  auto doc = frozen();
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(doc->source.mtimes, SourceMtimes::kPreserved);
  auto listed = list_mtimes(src_);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(doc->source.mtimes_sha256, mtimes_digest(*listed));
  ASSERT_EQ(doc->source.mtimes_list.size(), 6u);  // ., Makefile.am, Makefile.in, sub, sub/deeper,
                                                  // sub/deeper/x.c
  EXPECT_EQ(format_mtime(doc->source.mtimes_list[1].mtime), "1600003600.000000222");
  EXPECT_EQ(doc->source_date_epoch, 315619200);

  auto passed = admit(request_.out, sha256_);
  EXPECT_TRUE(passed.report.all_passed()) << passed.report.summary();

  set_mtime(src_ + "/sub/deeper/x.c", 1500000099);
  auto refused = admit(request_.out, sha256_);
  ASSERT_FALSE(refused.report.all_passed());
  bool named = false;
  for (const PinCheck& c : refused.report.checks)
    if (c.target == "source.mtimes_sha256") {
      EXPECT_EQ(c.status, CheckStatus::kFail);
      named = c.observed.find(
                  "sub/deeper/x.c: mtime 1500000099.000000000, expected "
                  "1500000000.000000000") != std::string::npos;
      EXPECT_TRUE(named) << c.observed;
    }
  EXPECT_TRUE(named);
}

TEST_F(SourceMtimesTree, ARunsCopyIsStampedFixedOrKeepsAndChecksTheHostsTimes) {
  auto fixed = frozen();
  ASSERT_TRUE(fixed.ok()) << fixed.error().message();
  VerifyOptions options;
  options.source_export_dir = dir_ / "copy";
  auto out = admit(request_.out, sha256_, options);
  ASSERT_TRUE(out.report.all_passed()) << out.report.summary();
  bool listed = false;
  for (const PinCheck& c : out.report.checks)
    if (c.target == "source.mtimes") {
      listed = true;
      EXPECT_EQ(c.observed, "fixed at 315619200 (1980-01-02T00:00:00Z)");
    }
  EXPECT_TRUE(listed);
  for (const char* rel :
       {"", "/Makefile.am", "/Makefile.in", "/sub", "/sub/deeper", "/sub/deeper/x.c"}) {
    SCOPED_TRACE(rel);
    struct stat st = lstat_of(options.source_export_dir + rel);
    EXPECT_EQ(st.st_mtim.tv_sec, 315619200);
    EXPECT_EQ(st.st_mtim.tv_nsec, 0);
    EXPECT_EQ(st.st_atim.tv_sec, 315619200);
  }

  request_.source_mtimes = "preserved";
  ASSERT_TRUE(frozen().ok());
  options.source_export_dir = dir_ / "copy2";
  auto kept = admit(request_.out, sha256_, options);
  ASSERT_TRUE(kept.report.all_passed()) << kept.report.summary();
  struct stat am = lstat_of(options.source_export_dir + "/Makefile.am");
  EXPECT_EQ(am.st_mtim.tv_sec, 1600003600);
  EXPECT_EQ(am.st_mtim.tv_nsec, 222);
  EXPECT_EQ(am.st_atim.tv_sec, 1600003600);
  EXPECT_EQ(lstat_of(options.source_export_dir + "/sub").st_mtim.tv_sec, 1500000002);
  EXPECT_EQ(lstat_of(options.source_export_dir).st_mtim.tv_sec, 1500000003);
}

TEST(SourceMtimesStamp, EveryEntryLinksIncludedGetsTheTimeChildrenBeforeTheirDirectory) {
  TempDir dir;
  std::string root = dir / "t";
  std::filesystem::create_directories(root + "/d/e");
  write_text(root + "/d/e/f", "f\n");
  ASSERT_EQ(::symlink("d/e/f", (root + "/link").c_str()), 0);
  ASSERT_TRUE(stamp_tree_times(root, 315619200).ok());
  for (const char* rel : {"", "/d", "/d/e", "/d/e/f", "/link"}) {
    SCOPED_TRACE(rel);
    struct stat st = lstat_of(root + rel);
    EXPECT_EQ(st.st_mtim.tv_sec, 315619200);
    EXPECT_EQ(st.st_atim.tv_sec, 315619200);
  }
  // The snapshot keeps the host's mtimes, nanoseconds and symlinks included.
  set_mtime(root + "/d/e/f", 1600000000, 42);
  set_mtime(root + "/link", 1600000001, 43);
  ASSERT_TRUE(snapshot_tree(root, dir / "snap").ok());
  auto host = list_mtimes(root);
  auto snap = list_mtimes(dir / "snap");
  ASSERT_TRUE(host.ok() && snap.ok());
  EXPECT_EQ(mtimes_listing(*snap), mtimes_listing(*host));
  EXPECT_NE(mtimes_listing(*snap).find("link\t1600000001.000000043\n"), std::string::npos);
  // For a fixed source the copy's times are stamped over afterwards: the host's are not copied.
  ASSERT_TRUE(snapshot_tree(root, dir / "fresh", SnapshotTimes::kCopyTime).ok());
  auto fresh = list_mtimes(dir / "fresh");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(mtimes_listing(*fresh).find("1600000001.000000043"), std::string::npos);
  EXPECT_EQ(mtimes_listing(*fresh).find("1600000000.000000042"), std::string::npos);
}

TEST(SourceMtimesGit, AGitSourceIsFixedAtItsCommitTimeAndCannotBePreserved) {
  TempDir dir;
  std::string repo = dir / "repo";
  std::string script = "set -e; mkdir -p '" + repo + "' && cd '" + repo +
                       "' && git init -q && echo hi > a.txt && git add a.txt && "
                       "GIT_COMMITTER_DATE='@1611111111 +0200' GIT_AUTHOR_DATE='@1500000000 +0000' "
                       "git -c user.name=t -c user.email=t@example.invalid commit -qm one";
  ASSERT_EQ(std::system(script.c_str()), 0);
  FreezeRequest r;
  r.out = dir / "a.json";
  r.source = repo;
  r.toolchain = dir / "tc";
  r.toolchain_mount = "/opt/tc";
  std::filesystem::create_directories(r.toolchain);
  r.argv = {"/bin/true"};
  auto frozen = freeze_admission(r);
  ASSERT_TRUE(frozen.ok()) << frozen.error().message();
  EXPECT_EQ(frozen->document.source_date_epoch, 1611111111);  // the committer's, not the author's

  r.out = dir / "b.json";
  r.source_mtimes = "preserved";
  auto refused = freeze_admission(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("git stores no mtimes"), std::string::npos)
      << refused.error().message();
}

}  // namespace
}  // namespace sealrun::admission
