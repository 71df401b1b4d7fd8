// Integration tests of the cgroup v1 back end on the real hierarchies here (docs/testbed.md): the
// groups are made under our own memory, pids and freezer groups, real jobs join them through
// join_fds() before exec, and the kernel enforces the limits: an allocation past memory.max is
// OOM-killed without swapping, a fork bomb stops at pids.max, a setsid + double-fork orphan that
// ignores SIGTERM is killed by the freezer stop, and remove() leaves no directory behind.
#include <gtest/gtest.h>

#include "containment/resgroup/cgroup_v1.h"
#include "containment/resgroup/cgroupfs_io.h"
#include "tests/resgroup/real_group_cases.h"
#include "tests/resgroup/real_group_support.h"

namespace sealrun::resgroup {
namespace {

using testing::stop_and_remove;
using testing::unique_id;

std::string locator_in(const ResourceGroup& g, const std::string& hierarchy) {
  for (const auto& l : g.locators())
    if (l.find("/" + hierarchy + "/") != std::string::npos) return l;
  return "";
}

TEST(CgroupV1Real, ProbeFindsItUsableHere) {
  auto p = probe_cgroup_v1();
  EXPECT_TRUE(p.available) << p.why;
  EXPECT_TRUE(p.memory_max);
  EXPECT_TRUE(p.pids_max);
  EXPECT_TRUE(p.swap_max) << "memsw files expected on this host: " << p.why;
  EXPECT_FALSE(p.memory_high);
}

TEST(CgroupV1Real, TheStrongestAvailableBackEndHereIsCgroupV1) {
  auto probes = probe_backends();
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_EQ(probes[0].backend, Backend::kSystemd);
  EXPECT_FALSE(probes[0].available) << "no systemd manager on this host: " << probes[0].why;
  EXPECT_EQ(probes[1].backend, Backend::kCgroupV2);
  EXPECT_FALSE(probes[1].available) << probes[1].why;  // memory is bound to v1 here
  EXPECT_FALSE(probes[1].why.empty());
  EXPECT_EQ(probes[2].backend, Backend::kCgroupV1);
  EXPECT_TRUE(probes[2].available) << probes[2].why;
  auto g = create_group(unique_id("auto"), {kUnlimited, 64ULL << 20, 0, 64});
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ((*g)->backend(), Backend::kCgroupV1);
  stop_and_remove(**g);
}

// On v1 memory.high has no equivalent: read back as not applied (the receipt says so).
const testing::BackendUnderTest kV1{
    Backend::kCgroupV1,
    {"memory_high_bytes"},
    [](const ResourceGroup& g) { return locator_in(g, "pids"); },
    [](const ResourceGroup& g) { return locator_in(g, "memory"); },
};

TEST(CgroupV1Real, AllocationPastMemoryMaxIsOomKilledWithoutSwap) {
  testing::expect_oom_past_memory_max_without_swap(kV1);
}

TEST(CgroupV1Real, AllocationUnderTheLimitSucceeds) {
  testing::expect_allocation_under_the_limit_succeeds(kV1);
}

TEST(CgroupV1Real, ForkBombStopsAtPidsMaxAndIsEmptiedByStop) {
  testing::expect_fork_bomb_held_at_pids_max(kV1, 64);
}

TEST(CgroupV1Real, SetsidDoubleForkOrphanIsKilledAndCounted) {
  StopReport s = testing::expect_orphan_killed_and_counted(kV1);
  bool killed = false;
  for (const auto& a : s.actions) killed |= a.rfind("KILL 1", 0) == 0;
  EXPECT_TRUE(killed) << "SIGTERM is ignored by the orphan: the freezer KILL must have ended it";
}

TEST(CgroupV1Real, RemoveRefusesWhileTheGroupHasProcesses) {
  testing::expect_remove_refused_while_busy(kV1);
}

}  // namespace
}  // namespace sealrun::resgroup
