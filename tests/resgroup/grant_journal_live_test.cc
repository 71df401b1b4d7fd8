// SPDX-License-Identifier: Apache-2.0
// Unit tests of the grant journal's two kinds of write: the durable record (<id>.json, fsync'd)
// and the live one (<id>.json.live, never fsync'd, for what a reboot destroys). list() reads the
// newest complete version; a live record a power failure tore is tolerated only when the durable
// record is from another boot (told by the boot id); forget removes both; and a record from
// another boot never names a live controller.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "containment/grant_journal.h"
#include "core/proc.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;
namespace fs = std::filesystem;

GrantRecord first(const std::string& id) {
  GrantRecord r;
  r.id = id;
  r.owner_uid = ::geteuid();
  r.controller_pid = ::getpid();
  r.controller_start = *own_process_start();
  r.job_user = "sealrun";
  r.owned_root = "/state/owned/" + id;
  r.created_at = "2026-12-01T01:02:03.456Z";
  return r;
}

JournalEntry only_entry(GrantJournal& j) {
  auto list = j.list();
  EXPECT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  return list->empty() ? JournalEntry{} : list->front();
}

TEST(GrantJournalLive, ALiveUpdateIsWhatListReadsAndTheDurableRecordStaysAsItWas) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  GrantRecord r = first("run1");
  ASSERT_TRUE(j->record(r).ok());
  r.group_locators = {"/sys/fs/cgroup/memory/sealrun-run1.1.2"};
  r.job_pid = 77;
  ASSERT_TRUE(j->record(r, RecordDurability::kUntilReboot).ok());
  struct stat st {};
  ASSERT_EQ(::stat((j->dir() + "/run1.json.live").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto durable = grant_record_from_json(testing::read_text(j->dir() + "/run1.json"));
  ASSERT_TRUE(durable.ok());
  EXPECT_EQ(durable->job_pid, 0) << "the durable record is not rewritten by a live update";
  EXPECT_EQ(durable->boot_id, *current_boot_id()) << "stamped with this boot";
  JournalEntry e = only_entry(*j);
  ASSERT_TRUE(e.readable) << e.problem;
  EXPECT_EQ(e.record.job_pid, 77);
  EXPECT_EQ(e.record.group_locators, r.group_locators);
  EXPECT_TRUE(GrantJournal::has_record(tmp.str(), "run1"));

  // A durable update after a live one keeps the live one current too.
  r.mechanism_locators = {{"container_name", "c1"}};
  ASSERT_TRUE(j->record(r).ok());
  e = only_entry(*j);
  ASSERT_TRUE(e.readable);
  EXPECT_EQ(e.record.mechanism_locators.at("container_name"), "c1");
  EXPECT_EQ(e.record.job_pid, 77);

  ASSERT_TRUE(j->forget("run1").ok());
  EXPECT_FALSE(fs::exists(j->dir() + "/run1.json.live"));
  EXPECT_FALSE(fs::exists(j->dir() + "/run1.json"));
  EXPECT_TRUE(j->list()->empty());
}

// What a power failure may leave: the live record empty or torn. From another boot that costs
// nothing (what it added is gone) and the durable record is listed; in this boot it is damage
// and reported, never guessed around.
TEST(GrantJournalLive, ATornLiveRecordIsToleratedOnlyAcrossABoot) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  GrantRecord before = first("rebooted");
  before.boot_id = "00000000-0000-0000-0000-000000000000";
  ASSERT_TRUE(j->record(before).ok());
  write_text(j->dir() + "/rebooted.json.live", "");
  ASSERT_TRUE(j->record(first("now")).ok());
  write_text(j->dir() + "/now.json.live", "{\"schema\": \"sealr");
  auto list = j->list();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  const JournalEntry& now = (*list)[0];
  const JournalEntry& rebooted = (*list)[1];
  EXPECT_FALSE(now.readable);
  EXPECT_NE(now.problem.find("live record now.json.live"), std::string::npos) << now.problem;
  ASSERT_TRUE(rebooted.readable) << rebooted.problem;
  EXPECT_EQ(rebooted.record.boot_id, before.boot_id);
  EXPECT_FALSE(controller_alive(rebooted.record)) << "same pid and start time, another boot";
  EXPECT_TRUE(controller_alive(first("alive")));
}

TEST(GrantJournalLive, ALiveRecordAloneIsReportedAndAnIdEndingInLiveIsItsOwnRecord) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  write_text(j->dir() + "/orphan.json.live", grant_record_to_json(first("orphan")));
  GrantRecord x = first("x");
  ASSERT_TRUE(j->record(x).ok());
  ASSERT_TRUE(j->record(first("x.live")).ok());  // x.live.json, not x's live record
  x.job_pid = 5;
  ASSERT_TRUE(j->record(x, RecordDurability::kUntilReboot).ok());
  auto list = j->list();
  ASSERT_TRUE(list.ok());
  std::map<std::string, JournalEntry> by_file;
  for (const auto& e : *list) by_file[fs::path(e.file).filename()] = e;
  ASSERT_EQ(by_file.size(), 3u);
  EXPECT_NE(by_file["orphan.json.live"].problem.find("without its durable record"),
            std::string::npos);
  ASSERT_TRUE(by_file["x.json"].readable);
  EXPECT_EQ(by_file["x.json"].record.job_pid, 5);
  ASSERT_TRUE(by_file["x.live.json"].readable);
  EXPECT_EQ(by_file["x.live.json"].record.id, "x.live");
  EXPECT_EQ(by_file["x.live.json"].record.job_pid, 0);
}

// A temporary of a write whose controller was killed before the rename is removed once its writer
// is gone; one whose writer runs (here: this process) is kept.
TEST(GrantJournalLive, ATemporaryOfADeadWriterIsRemovedAndOfALiveOneKept) {
  TempDir tmp;
  auto j = GrantJournal::open(tmp.str());
  ASSERT_TRUE(j.ok());
  std::string dead = ".r.json.tmp-999999999-0000abcd";  // beyond pid_max: no such process
  std::string alive = ".r.json.tmp-" + std::to_string(::getpid()) + "-0000abcd";
  write_text(j->dir() + "/" + dead, "{");
  write_text(j->dir() + "/" + alive, "{");
  auto list = j->list();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  for (const auto& e : *list) EXPECT_TRUE(e.temporary) << e.file;
  auto gone = j->remove_dead_temporary(dead);
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  EXPECT_TRUE(*gone);
  EXPECT_FALSE(fs::exists(j->dir() + "/" + dead));
  auto kept = j->remove_dead_temporary(alive);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
  EXPECT_TRUE(fs::exists(j->dir() + "/" + alive));
  EXPECT_FALSE(j->remove_dead_temporary("r.json").ok());
  EXPECT_FALSE(j->remove_dead_temporary(".r.json.tmp-x-1").ok());
}

}  // namespace
}  // namespace sealrun
