// SPDX-License-Identifier: Apache-2.0
// Unit tests of the cgroup v1 back end's file protocol against a temp tree shaped like a hybrid
// cgroupfs: where groups are made (only under our own groups), what is written, how read-back
// detects a mismatch, how events are parsed, when a stop is confirmed, and what is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "containment/resgroup/cgroup_v1.h"
#include "tests/resgroup/fake_cgroupfs.h"

namespace sealrun::resgroup {
namespace {

using namespace sealrun::resgroup::testing;
namespace fs = std::filesystem;

class V1Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* h : {"memory", "pids", "freezer"})
      make_files(tmp_ / (std::string(h) + "/own/x"), {{"cgroup.procs", "1\n"}});
    write_text(tmp_ / "self_cgroup", "8:pids:/own/x\n6:freezer:/own/x\n4:memory:/own/x\n0::/\n");
    seams_.cgroupfs_root = tmp_.str();
    seams_.proc_self_cgroup = tmp_ / "self_cgroup";
    seams_.require_cgroupfs_magic = false;
    seams_.confirm_timeout_ms = 200;
    seams_.after_mkdir = [this](const std::string& dir) { v1_group_files(dir, memsw_); };
  }
  std::unique_ptr<ResourceGroup> create(const std::string& id = "job1") {
    auto g = create_cgroup_v1_group(id, limits_, seams_);
    EXPECT_TRUE(g.ok()) << g.error().message();
    return g.ok() ? std::move(*g) : nullptr;
  }
  std::string dir_of(const ResourceGroup& g, const std::string& hierarchy) {
    for (const auto& l : g.locators())
      if (l.find("/" + hierarchy + "/") != std::string::npos) return l;
    return "";
  }
  void drop_all(const ResourceGroup& g) {
    for (const auto& l : g.locators()) drop_interface_files(l);
  }

  sealrun::testing::TempDir tmp_;
  CgroupfsSeams seams_;
  GroupLimits limits_{48ULL << 20, 64ULL << 20, 0, 64};
  bool memsw_ = true;
};

TEST_F(V1Tree, MakesOneGroupPerHierarchyUnderOurOwnAndWritesLimits) {
  auto g = create();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->backend(), Backend::kCgroupV1);
  auto locs = g->locators();
  ASSERT_EQ(locs.size(), 3u);
  for (const auto& l : locs) {
    EXPECT_EQ(l.rfind(tmp_.str() + "/", 0), 0u) << l;
    EXPECT_NE(l.find("/own/x/sealrun-job1."), std::string::npos) << l;
    EXPECT_TRUE(parse_group_dir_name(fs::path(l).filename().string()).has_value()) << l;
  }
  std::string mem = dir_of(*g, "memory");
  EXPECT_EQ(read_text(mem + "/memory.limit_in_bytes"), "67108864");
  EXPECT_EQ(read_text(mem + "/memory.memsw.limit_in_bytes"), "67108864");  // max + swap 0
  EXPECT_EQ(read_text(mem + "/memory.soft_limit_in_bytes"), "50331648");
  EXPECT_EQ(read_text(dir_of(*g, "pids") + "/pids.max"), "64");
  EXPECT_EQ(g->join_fds().size(), 3u);
  drop_all(*g);
  ASSERT_TRUE(g->remove().ok());
  for (const auto& l : locs) EXPECT_FALSE(fs::exists(l)) << l;
}

TEST_F(V1Tree, SwapAllowanceIsAddedToMemsw) {
  limits_.swap_max_bytes = 16ULL << 20;
  auto g = create();
  ASSERT_TRUE(g);
  EXPECT_EQ(read_text(dir_of(*g, "memory") + "/memory.memsw.limit_in_bytes"), "83886080");
  drop_all(*g);
}

TEST_F(V1Tree, ReadBackIsHonestAboutHighAndDetectsMismatch) {
  auto g = create();
  ASSERT_TRUE(g);
  // The kernel would echo what was written; the test plays it.
  std::string mem = dir_of(*g, "memory");
  auto rb = g->read_back();
  ASSERT_TRUE(rb.ok()) << rb.error().message();
  ASSERT_EQ(rb->size(), 4u);
  for (const auto& l : *rb) {
    if (l.name == "memory_high_bytes") {
      EXPECT_FALSE(l.applied);
      EXPECT_NE(l.note.find("no throttling memory.high"), std::string::npos) << l.note;
      EXPECT_EQ(l.observed, 48ULL << 20);
    } else {
      EXPECT_TRUE(l.applied) << l.name << ": " << l.note;
    }
  }
  write_text(mem + "/memory.limit_in_bytes", "9223372036854771712\n");
  write_text(dir_of(*g, "pids") + "/pids.max", "max\n");
  rb = g->read_back();
  ASSERT_TRUE(rb.ok());
  for (const auto& l : *rb) {
    if (l.name == "memory_max_bytes" || l.name == "pids_max") {
      EXPECT_FALSE(l.applied) << l.name;
      EXPECT_NE(l.note.find("expected"), std::string::npos) << l.note;
    }
  }
  drop_all(*g);
}

TEST_F(V1Tree, AnAncestorsLowerLimitIsTheEffectiveOneAndNamed) {
  // A parent above our own group (a Slurm step, a CI runner's group) allows only 32 MiB: that is
  // what binds the job, not the 64 MiB sealrun wrote (ACCEPTANCE 33).
  write_text(tmp_ / "memory/own/memory.limit_in_bytes", "33554432\n");
  write_text(tmp_ / "pids/own/x/pids.max", "20\n");
  auto g = create();
  ASSERT_TRUE(g);
  auto rb = g->read_back();
  ASSERT_TRUE(rb.ok()) << rb.error().message();
  for (const auto& l : *rb) {
    if (l.name == "memory_max_bytes") {
      EXPECT_TRUE(l.applied) << "ours is applied as written";
      EXPECT_EQ(l.effective, 33554432u);
      EXPECT_EQ(l.effective_set_by, "memory:/own");
      EXPECT_NE(l.note.find("lower limit"), std::string::npos) << l.note;
    }
    if (l.name == "pids_max") {
      EXPECT_EQ(l.effective, 20u);
      EXPECT_EQ(l.effective_set_by, "pids:/own/x");
    }
  }
  drop_all(*g);
}

TEST_F(V1Tree, WithoutAncestorLimitsOursIsTheEffectiveOne) {
  auto g = create();
  ASSERT_TRUE(g);
  auto rb = g->read_back();
  ASSERT_TRUE(rb.ok());
  for (const auto& l : *rb)
    if (l.name == "memory_max_bytes") {
      EXPECT_EQ(l.effective, 64ull << 20);
      EXPECT_NE(l.effective_set_by.find("sealrun-job1."), std::string::npos) << l.effective_set_by;
    }
  drop_all(*g);
}

TEST_F(V1Tree, WithoutSwapAccountingSwapIsReportedNotApplied) {
  memsw_ = false;
  auto g = create();
  ASSERT_TRUE(g);
  auto rb = g->read_back();
  ASSERT_TRUE(rb.ok());
  bool seen = false;
  for (const auto& l : *rb)
    if (l.name == "swap_max_bytes") {
      seen = true;
      EXPECT_FALSE(l.applied);
      EXPECT_FALSE(l.observed.has_value());
      EXPECT_NE(l.note.find("swap_max not applied"), std::string::npos) << l.note;
    }
  EXPECT_TRUE(seen);
  drop_all(*g);
}

TEST_F(V1Tree, MemoryReportFromFailcntOomControlAndPeaks) {
  auto g = create();
  ASSERT_TRUE(g);
  std::string mem = dir_of(*g, "memory");
  write_text(mem + "/memory.max_usage_in_bytes", "67100000\n");
  write_text(mem + "/memory.memsw.max_usage_in_bytes", "67100000\n");
  write_text(mem + "/memory.failcnt", "1234\n");
  write_text(mem + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  auto r = g->memory_report();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->peak_bytes, 67100000u);
  EXPECT_EQ(r->events_max, 1234u);
  EXPECT_EQ(r->events_oom_kill, 1u);
  EXPECT_EQ(r->events_oom, 1u);
  EXPECT_EQ(r->swap_used_bytes, 0u);
  write_text(mem + "/memory.memsw.max_usage_in_bytes", "68100000\n");
  EXPECT_EQ(g->memory_report()->swap_used_bytes, 1000000u);
  drop_all(*g);
}

TEST_F(V1Tree, StopOfAnEmptyGroupIsConfirmed) {
  auto g = create();
  ASSERT_TRUE(g);
  auto s = g->stop(0);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_EQ(s->processes_signalled, 0u);
  drop_all(*g);
}

TEST_F(V1Tree, StopIsNotConfirmedWhileProcsListsAProcessAndNonMembersAreNeverSignalled) {
  auto g = create();
  ASSERT_TRUE(g);
  // The test's own pid, listed in the fake group's cgroup.procs: its real /proc/<pid>/cgroup says
  // it is not a member, so it must not be signalled (we would not survive a SIGKILL), and the
  // group must not be reported empty.
  write_text(dir_of(*g, "pids") + "/cgroup.procs", std::to_string(::getpid()) + "\n");
  auto s = g->stop(50);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_FALSE(s->confirmed);
  EXPECT_EQ(s->processes_signalled, 1u);
  EXPECT_EQ(read_text(dir_of(*g, "freezer") + "/freezer.state"), "THAWED");  // thawed again
  write_text(dir_of(*g, "pids") + "/cgroup.procs", "");
  drop_all(*g);
}

TEST_F(V1Tree, RefusesToReuseAGroupAndBadRunIds) {
  auto g = create("same");
  ASSERT_TRUE(g);
  auto again = create_cgroup_v1_group("same", limits_, seams_);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("refusing to reuse"), std::string::npos)
      << again.error().message();
  for (const char* bad : {"../x", "a/b", ""})
    EXPECT_FALSE(create_cgroup_v1_group(bad, limits_, seams_).ok()) << bad;
  drop_all(*g);
}

TEST_F(V1Tree, RefusesAnOwnPathThatLeavesTheHierarchy) {
  write_text(tmp_ / "self_cgroup", "8:pids:/own/x\n6:freezer:/own/x\n4:memory:/own/../../etc\n");
  auto g = create_cgroup_v1_group("j", limits_, seams_);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message().find("'..'"), std::string::npos) << g.error().message();
  for (const char* h : {"memory", "pids", "freezer"})
    for (const auto& e : fs::directory_iterator(tmp_ / (std::string(h) + "/own/x")))
      EXPECT_EQ(e.path().filename(), "cgroup.procs") << e.path();
}

TEST_F(V1Tree, AttachRefusesLocatorsOutsideSealrunGroups) {
  std::string r = tmp_.str();
  for (const std::string& bad :
       {std::string("/etc/passwd"), r + "/memory/own/x", r + "/memory/own/../own/sealrun-a.1.2",
        r + "/cpu/own/sealrun-a.1.2", r + "/memory/own/x/other.1.2", r + "/memory"}) {
    auto g = attach_cgroup_v1_group({bad}, seams_);
    EXPECT_FALSE(g.ok()) << bad;
  }
}

TEST_F(V1Tree, AttachFindsTheGroupsAgainAndReportsGoneOnes) {
  auto g = create("again");
  ASSERT_TRUE(g);
  auto locs = g->locators();
  fs::remove_all(dir_of(*g, "freezer"));
  std::vector<std::string> gone;
  auto a = attach_cgroup_v1_group(locs, seams_, &gone);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_NE(gone[0].find("/freezer/"), std::string::npos);
  EXPECT_EQ((*a)->locators().size(), 2u);
  auto s = (*a)->stop(0);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->confirmed);
  drop_all(*g);
  ASSERT_TRUE((*a)->remove().ok());
  for (const auto& l : locs) EXPECT_FALSE(fs::exists(l)) << l;
}

}  // namespace
}  // namespace sealrun::resgroup
