// SPDX-License-Identifier: Apache-2.0
// Unit tests of the grant journal: records round-trip, the directory and files are private, every
// corrupt or unexpected file is listed with its problem (never skipped), forget is idempotent,
// and controller liveness is told by pid + starttime.
#include "containment/grant_journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;
namespace fs = std::filesystem;

GrantRecord sample(const std::string& id) {
  GrantRecord r;
  r.id = id;
  r.owner_uid = ::geteuid();
  r.controller_pid = ::getpid();
  r.controller_start = *own_process_start();
  r.mechanism = "bwrap";
  r.job_user = "sealrun";
  r.job_pid = 4242;
  r.job_start = "123456";
  r.group_backend = "cgroup-v1";
  r.group_locators = {"/sys/fs/cgroup/memory/sealrun-" + id + ".1.2"};
  r.owned_root = "/state/owned/" + id;
  r.created_at = "2026-11-30T01:02:03.456Z";
  return r;
}

TEST(GrantJournal, RecordsRoundTripPrivately) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp / "state");
  ASSERT_TRUE(j.ok()) << j.error().message();
  ASSERT_TRUE(j->record(sample("a")).ok());
  ASSERT_TRUE(j->record(sample("b")).ok());
  struct stat st {};
  ASSERT_EQ(::stat(j->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((j->dir() + "/a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto list = j->list();
  ASSERT_TRUE(list.ok()) << list.error().message();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_TRUE((*list)[0].readable);
  const GrantRecord& r = (*list)[0].record;
  GrantRecord want = sample("a");
  EXPECT_EQ(r.id, "a");
  EXPECT_EQ(r.controller_pid, want.controller_pid);
  EXPECT_EQ(r.controller_start, want.controller_start);
  EXPECT_EQ(r.group_locators, want.group_locators);
  EXPECT_EQ(r.job_pid, 4242);
  EXPECT_EQ(r.job_start, "123456");
  EXPECT_EQ(r.created_at, want.created_at);
  ASSERT_TRUE(j->forget("a").ok());
  ASSERT_TRUE(j->forget("a").ok());  // idempotent
  EXPECT_EQ(j->list()->size(), 1u);
}

// Runs in one state directory write their own records under a shared lock (issue 31): one run's
// record (and its fsyncs) never waits for another's. Here a shared holder stands in for another
// writer; before, record() and forget() took the lock exclusively and waited for it.
TEST(GrantJournal, WritersOfTheirOwnRecordsDoNotWaitForOneAnother) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok()) << j.error().message();
  int other = ::open((j->dir() + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0);
  ASSERT_EQ(::flock(other, LOCK_SH), 0);
  auto done = std::async(std::launch::async, [&] {
    Status st = j->record(sample("mine"));
    return st.ok() && j->forget("mine").ok();
  });
  const bool finished = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  ::close(other);  // lets a waiting writer go, so that a failure ends too
  EXPECT_TRUE(finished) << "record() waited for another writer's lock";
  EXPECT_TRUE(done.get());
}

TEST(GrantJournal, ARecordWithoutJobStartFromAnOlderControllerIsStillRead) {
  std::string text = grant_record_to_json(sample("old"));
  const std::string field = "\"job_start\": \"123456\",";
  auto at = text.find(field);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, field.size());
  auto r = grant_record_from_json(text);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->job_pid, 4242);
  EXPECT_EQ(r->job_start, "");
  // But a job_start of the wrong type is a corrupt record, not a missing one.
  std::string wrong = grant_record_to_json(sample("w"));
  wrong.replace(wrong.find("\"123456\""), 8, "123456");
  EXPECT_FALSE(grant_record_from_json(wrong).ok());
}

TEST(GrantJournal, CorruptAndUnexpectedFilesAreListedWithTheProblem) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  std::string d = j->dir();
  ASSERT_TRUE(j->record(sample("good")).ok());
  write_text(d + "/notjson.json", "{ this is not json");
  write_text(d + "/array.json", "[1,2]");
  std::string missing = grant_record_to_json(sample("missing"));
  missing.replace(missing.find("\"job_pid\""), 9, "\"job_pod\"");
  write_text(d + "/missing.json", missing);
  std::string wrongtype = grant_record_to_json(sample("wrongtype"));
  wrongtype.replace(wrongtype.find("\"job_pid\": 4242"), 15, "\"job_pid\": \"42\"");
  write_text(d + "/wrongtype.json", wrongtype);
  write_text(d + "/renamed.json", grant_record_to_json(sample("other")));
  write_text(d + "/huge.json", std::string(200 * 1024, ' '));
  write_text(d + "/.x.json.tmp-1-00000000", "{");
  write_text(d + "/stray.txt", "");
  fs::create_symlink("/etc/passwd", d + "/link.json");
  auto list = j->list();
  ASSERT_TRUE(list.ok());
  std::map<std::string, std::string> problems;
  for (const auto& e : *list) problems[fs::path(e.file).filename()] = e.problem;
  EXPECT_EQ(problems.size(), 10u);
  EXPECT_EQ(problems["good.json"], "");
  EXPECT_NE(problems["notjson.json"].find("not JSON"), std::string::npos);
  EXPECT_NE(problems["array.json"].find("not a JSON object"), std::string::npos);
  EXPECT_NE(problems["missing.json"].find("'job_pid' is missing"), std::string::npos);
  EXPECT_NE(problems["wrongtype.json"].find("'job_pid' is not an integer"), std::string::npos);
  EXPECT_NE(problems["renamed.json"].find("does not match its file name"), std::string::npos);
  EXPECT_NE(problems["huge.json"].find("unreadable"), std::string::npos);
  EXPECT_NE(problems[".x.json.tmp-1-00000000"].find("temporary"), std::string::npos);
  EXPECT_NE(problems["stray.txt"].find("unexpected"), std::string::npos);
  EXPECT_NE(problems["link.json"].find("unreadable"), std::string::npos);
  for (const auto& e : *list) EXPECT_EQ(e.readable, e.problem.empty()) << e.file;
}

TEST(GrantJournal, RefusesBadIdsAndASymlinkedDirectory) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE(j->record(sample("../escape")).ok());
  EXPECT_FALSE(j->forget("../escape").ok());
  fs::create_directories(tmp / "elsewhere");
  fs::create_directories(tmp / "s2");
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "s2/grants");
  EXPECT_FALSE(GrantJournal::open(tmp / "s2").ok());
}

TEST(GrantJournal, WideningPermissionsAreTightened) {
  TempDir tmp;
  fs::create_directories(tmp / "grants");
  ::chmod((tmp / "grants").c_str(), 0777);
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  struct stat st {};
  ASSERT_EQ(::stat(j->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(GrantJournal, ControllerLivenessByPidAndStarttime) {
  GrantRecord r = sample("x");
  EXPECT_TRUE(controller_alive(r));
  r.controller_start += "0";
  EXPECT_FALSE(controller_alive(r));
  auto exe = find_program("true");
  ASSERT_TRUE(exe.ok());
  SpawnOptions o;
  o.argv = {*exe};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok());
  GrantRecord dead = sample("y");
  dead.controller_pid = child->pid();
  dead.controller_start = "1";
  ASSERT_TRUE(child->wait().ok());
  EXPECT_FALSE(controller_alive(dead));
}

}  // namespace
}  // namespace sealrun
