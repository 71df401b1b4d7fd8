// SPDX-License-Identifier: Apache-2.0
// Unit tests of the delegated cgroup v2 back end's file protocol against a temp tree shaped like a
// cgroup2 mount. The test plays the kernel (it writes "populated 0" once cgroup.kill was written,
// fills memory.events, ...). Enforcement is proven by cgroup_v2_vm_test.cc inside a pure-v2 VM: the
// development hosts' memory controller is bound to cgroup v1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "containment/resgroup/cgroup_v2.h"
#include "core/syscall.h"
#include "tests/resgroup/fake_cgroupfs.h"

namespace sealrun::resgroup {
namespace {

using namespace sealrun::resgroup::testing;
namespace fs = std::filesystem;

class V2Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    make_files(tmp_.str(), {{"cgroup.controllers", "cpu memory pids\n"}});
    own_ = tmp_ / "user.slice/own";
    make_files(own_, {{"cgroup.controllers", "memory pids\n"},
                      {"cgroup.subtree_control", ""},
                      {"cgroup.procs", ""}});
    write_text(tmp_ / "self_cgroup", "0::/user.slice/own\n");
    seams_.cgroupfs_root = tmp_.str();
    seams_.proc_self_cgroup = tmp_ / "self_cgroup";
    seams_.require_cgroupfs_magic = false;
    seams_.confirm_timeout_ms = 300;
    seams_.after_mkdir = [this](const std::string& dir) { v2_group_files(dir, swap_); };
  }
  Result<std::unique_ptr<ResourceGroup>> create(const std::string& id = "job") {
    return create_cgroup_v2_group(id, limits_, seams_);
  }

  sealrun::testing::TempDir tmp_;
  std::string own_;
  CgroupfsSeams seams_;
  GroupLimits limits_{48ULL << 20, 64ULL << 20, 0, 64};
  bool swap_ = true;
};

TEST_F(V2Tree, EnablesControllersMakesAChildAndWritesLimits) {
  auto g = create();
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(read_text(own_ + "/cgroup.subtree_control"), "+memory +pids");
  auto locs = (*g)->locators();
  ASSERT_EQ(locs.size(), 1u);
  std::string dir = locs[0];
  EXPECT_EQ(dir.rfind(own_ + "/sealrun-job.", 0), 0u) << dir;
  EXPECT_EQ(read_text(dir + "/memory.max"), "67108864");
  EXPECT_EQ(read_text(dir + "/memory.high"), "50331648");
  EXPECT_EQ(read_text(dir + "/memory.swap.max"), "0");
  EXPECT_EQ(read_text(dir + "/pids.max"), "64");
  EXPECT_EQ((*g)->join_fds().size(), 1u);
  auto rb = (*g)->read_back();
  ASSERT_TRUE(rb.ok()) << rb.error().message();
  ASSERT_EQ(rb->size(), 4u);
  for (const auto& l : *rb) EXPECT_TRUE(l.applied) << l.name << ": " << l.note;
  drop_interface_files(dir);
  ASSERT_TRUE((*g)->remove().ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(V2Tree, ReadBackDetectsAMismatch) {
  auto g = create();
  ASSERT_TRUE(g.ok());
  std::string dir = (*g)->locators()[0];
  write_text(dir + "/memory.high", "max\n");
  write_text(dir + "/memory.swap.max", "max\n");
  auto rb = (*g)->read_back();
  ASSERT_TRUE(rb.ok());
  for (const auto& l : *rb) {
    bool bad = l.name == "memory_high_bytes" || l.name == "swap_max_bytes";
    EXPECT_EQ(l.applied, !bad) << l.name;
    if (bad) {
      EXPECT_NE(l.note.find("reads max"), std::string::npos) << l.note;
    }
  }
  drop_interface_files(dir);
}

TEST_F(V2Tree, WithoutSwapFilesSwapIsNotApplied) {
  swap_ = false;
  auto g = create();
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto rb = (*g)->read_back();
  ASSERT_TRUE(rb.ok());
  std::vector<LimitReadback> all = std::move(rb).value();
  for (const auto& l : all)
    if (l.name == "swap_max_bytes") {
      EXPECT_FALSE(l.applied);
      EXPECT_NE(l.note.find("swap_max not applied"), std::string::npos);
    }
  drop_interface_files((*g)->locators()[0]);
}

TEST_F(V2Tree, RefusesWhenMemoryIsNotDelegated) {
  write_text(own_ + "/cgroup.controllers", "pids\n");
  auto g = create();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message().find("memory controller is not delegated"), std::string::npos)
      << g.error().message();
}

TEST_F(V2Tree, RefusesWhenOurGroupHoldsOtherProcesses) {
  write_text(own_ + "/cgroup.procs", "1\n" + std::to_string(::getpid()) + "\n");
  auto g = create();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message().find("no-internal-processes"), std::string::npos)
      << g.error().message();
  EXPECT_EQ(read_text(own_ + "/cgroup.subtree_control"), "");  // nothing enabled
}

TEST_F(V2Tree, MovesItselfIntoALeafWhenItIsAloneInItsGroup) {
  write_text(own_ + "/cgroup.procs", std::to_string(::getpid()) + "\n");
  auto g = create();
  ASSERT_TRUE(g.ok()) << g.error().message();
  std::string leaf;
  for (const auto& e : fs::directory_iterator(own_))
    if (e.path().filename().string().rfind("sealrun-controller-leaf.", 0) == 0) leaf = e.path();
  ASSERT_FALSE(leaf.empty());
  EXPECT_EQ(read_text(leaf + "/cgroup.procs"), std::to_string(::getpid()));
  EXPECT_EQ(read_text(own_ + "/cgroup.subtree_control"), "+memory +pids");
  // The kernel now reports us in the leaf; the next group is still made beside it, not in it.
  write_text(tmp_ / "self_cgroup",
             "0::/user.slice/own/" + fs::path(leaf).filename().string() + "\n");
  auto g2 = create("job2");
  ASSERT_TRUE(g2.ok()) << g2.error().message();
  EXPECT_EQ((*g2)->locators()[0].rfind(own_ + "/sealrun-job2.", 0), 0u) << (*g2)->locators()[0];
  drop_interface_files((*g)->locators()[0]);
  drop_interface_files((*g2)->locators()[0]);
}

TEST_F(V2Tree, MemoryReportFromPeakAndEvents) {
  auto g = create();
  ASSERT_TRUE(g.ok());
  std::string dir = (*g)->locators()[0];
  write_text(dir + "/memory.peak", "67108864\n");
  write_text(dir + "/memory.events",
             "low 0\nhigh 17\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n");
  write_text(dir + "/memory.swap.current", "0\n");
  auto r = (*g)->memory_report();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->peak_bytes, 67108864u);
  EXPECT_EQ(r->events_high, 17u);
  EXPECT_EQ(r->events_max, 5u);
  EXPECT_EQ(r->events_oom, 1u);
  EXPECT_EQ(r->events_oom_kill, 1u);
  EXPECT_EQ(r->swap_used_bytes, 0u);
  drop_interface_files(dir);
}

TEST_F(V2Tree, StopWritesCgroupKillAndIsConfirmedByPopulatedZero) {
  auto g = create();
  ASSERT_TRUE(g.ok());
  std::string dir = (*g)->locators()[0];
  write_text(dir + "/cgroup.events", "populated 1\nfrozen 0\n");
  std::thread kernel([&] {
    // Plays the kernel: once cgroup.kill says 1, the group empties.
    int64_t deadline = monotonic_ms() + 5000;
    while (monotonic_ms() < deadline && read_text(dir + "/cgroup.kill") != "1") ::usleep(2000);
    write_text(dir + "/cgroup.events", "populated 0\nfrozen 0\n");
  });
  auto s = (*g)->stop(20);
  kernel.join();
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  bool killed = false;
  for (const auto& a : s->actions) killed |= a.find("cgroup.kill") != std::string::npos;
  EXPECT_TRUE(killed);
  drop_interface_files(dir);
}

TEST_F(V2Tree, StopIsNotConfirmedWhileStillPopulated) {
  auto g = create();
  ASSERT_TRUE(g.ok());
  std::string dir = (*g)->locators()[0];
  write_text(dir + "/cgroup.events", "populated 1\nfrozen 0\n");
  auto s = (*g)->stop(20);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->confirmed);
  EXPECT_EQ(read_text(dir + "/cgroup.kill"), "1");
  drop_interface_files(dir);
}

TEST_F(V2Tree, HybridMountUnderUnified) {
  fs::remove(tmp_ / "cgroup.controllers");
  fs::create_directories(tmp_ / "unified");
  fs::rename(tmp_ / "user.slice", tmp_ / "unified/user.slice");
  make_files(tmp_ / "unified", {{"cgroup.controllers", "memory pids\n"}});
  auto g = create();
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ((*g)->locators()[0].rfind(tmp_ / "unified/user.slice/own/sealrun-job.", 0), 0u);
  drop_interface_files((*g)->locators()[0]);
}

TEST_F(V2Tree, AttachRefusesForeignLocatorsAndFindsOurs) {
  std::string r = tmp_.str();
  for (const std::string& bad :
       {std::string("/sys/fs/cgroup/x"), own_, own_ + "/../sealrun-a.1.2", own_ + "/other.1.2"})
    EXPECT_FALSE(attach_cgroup_v2_group({bad}, seams_).ok()) << bad;
  EXPECT_FALSE(attach_cgroup_v2_group({}, seams_).ok());
  auto g = create();
  ASSERT_TRUE(g.ok());
  std::string loc = (*g)->locators()[0];
  std::vector<std::string> gone;
  auto a = attach_cgroup_v2_group({loc}, seams_, &gone);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(gone.empty());
  auto s = (*a)->stop(0);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->confirmed);  // populated 0
  drop_interface_files(loc);
  ASSERT_TRUE((*a)->remove().ok());
  EXPECT_FALSE(fs::exists(loc));
  gone.clear();
  auto again = attach_cgroup_v2_group({loc}, seams_, &gone);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(gone.size(), 1u);
}

}  // namespace
}  // namespace sealrun::resgroup
