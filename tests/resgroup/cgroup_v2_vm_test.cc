// The cgroup v2 back end enforcing for real. Runs only inside the throwaway VM that
// tests/resgroup/vm/run_in_vm.sh boots (a Debian 6.1 kernel with cgroup_no_v1=all, so v2 is the
// only hierarchy, as on a modern systemd host), where its init puts this program alone in a
// cgroup of its own, /ci, with memory and pids delegated. The development hosts cannot run it:
// their memory controller is bound to cgroup v1 (docs/testbed.md). The same jobs as the v1 tests:
// an allocation past memory.max is OOM-killed without swap, a fork bomb stops at pids.max, a
// setsid + double-fork orphan that ignores SIGTERM is killed by cgroup.kill, and remove() leaves
// nothing behind.
#include <gtest/gtest.h>

#include "containment/resgroup/cgroup_v1.h"
#include "containment/resgroup/cgroup_v2.h"
#include "containment/resgroup/cgroupfs_io.h"
#include "tests/resgroup/real_group_cases.h"
#include "tests/resgroup/real_group_support.h"

namespace sealrun::resgroup {
namespace {

using testing::slurp;
using testing::spawn_in;
using testing::stop_and_remove;
using testing::unique_id;

std::string dir_of(const ResourceGroup& g) {
  auto locs = g.locators();
  return locs.empty() ? "" : locs.front();
}

TEST(CgroupV2Vm, ProbeFindsEveryLimitEnforceable) {
  auto p = probe_cgroup_v2();
  ASSERT_TRUE(p.available) << p.why;
  EXPECT_TRUE(p.memory_max);
  EXPECT_TRUE(p.memory_high);
  EXPECT_TRUE(p.swap_max) << p.why;
  EXPECT_TRUE(p.pids_max);
}

TEST(CgroupV2Vm, TheStrongestAvailableBackEndIsCgroupV2) {
  auto probes = probe_backends();
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_FALSE(probes[0].available) << "no systemd in the VM: " << probes[0].why;
  EXPECT_TRUE(probes[1].available) << probes[1].why;
  EXPECT_FALSE(probes[2].available) << "cgroup_no_v1=all: " << probes[2].why;
  auto g = create_group(unique_id("auto"), {kUnlimited, 64ULL << 20, 0, 64});
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ((*g)->backend(), Backend::kCgroupV2);
  EXPECT_EQ(slurp(dir_of(**g) + "/memory.max"), std::to_string(64ULL << 20) + "\n");
  EXPECT_EQ(slurp(dir_of(**g) + "/memory.swap.max"), "0\n");
  stop_and_remove(**g);
}

const testing::BackendUnderTest kV2{Backend::kCgroupV2, {}, dir_of, dir_of};

TEST(CgroupV2Vm, AllocationPastMemoryMaxIsOomKilledWithoutSwap) {
  testing::expect_oom_past_memory_max_without_swap(kV2);
}

TEST(CgroupV2Vm, AllocationOverMemoryHighIsThrottledAndCountedNotKilled) {
  // memory.high has no v1 equivalent; here it is real: going over it raises the "high" event and
  // reclaim pressure, but the job lives on.
  auto g = kV2.make("high", {32ULL << 20, 256ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto child = spawn_in(*g, {ALLOC_HELPER, "36"});
  ASSERT_TRUE(child.ok()) << child.error().message();
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->success()) << st->describe();
  auto r = g->memory_report();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_GE(r->events_high, 1u);
  EXPECT_EQ(r->events_oom_kill, 0u);
  stop_and_remove(*g);
}

TEST(CgroupV2Vm, AllocationUnderTheLimitSucceeds) {
  testing::expect_allocation_under_the_limit_succeeds(kV2);
}

TEST(CgroupV2Vm, ForkBombStopsAtPidsMaxAndIsEmptiedByStop) {
  testing::expect_fork_bomb_held_at_pids_max(kV2, 32);
}

TEST(CgroupV2Vm, SetsidDoubleForkOrphanIsKilledByCgroupKill) {
  StopReport s = testing::expect_orphan_killed_and_counted(kV2);
  bool by_kill_file = false;
  for (const auto& a : s.actions) by_kill_file |= a.find("cgroup.kill") != std::string::npos;
  EXPECT_TRUE(by_kill_file) << "SIGTERM is ignored by the orphan: cgroup.kill must have ended it";
}

TEST(CgroupV2Vm, RemoveRefusesWhileTheGroupHasProcesses) {
  testing::expect_remove_refused_while_busy(kV2);
}

}  // namespace
}  // namespace sealrun::resgroup
