// The cgroup v2 back end enforcing for real. Runs only inside the throwaway VM that
// tests/resgroup/vm/run_in_vm.sh boots (a Debian 6.1 kernel with cgroup_no_v1=all, so v2 is the
// only hierarchy, as on a modern systemd host), where its init puts this program alone in a
// cgroup of its own, /ci, with memory and pids delegated. The development hosts cannot run it:
// their memory controller is bound to cgroup v1 (TESTBED.md). The same jobs as the v1 tests:
// an allocation past memory.max is OOM-killed without swap, a fork bomb stops at pids.max, a
// setsid + double-fork orphan that ignores SIGTERM is killed by cgroup.kill, and remove() leaves
// nothing behind.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "containment/resgroup/cgroup_v1.h"
#include "containment/resgroup/cgroup_v2.h"
#include "containment/resgroup/cgroupfs_io.h"
#include "core/process.h"
#include "core/syscall.h"
#include "tests/resgroup/real_group_support.h"

namespace sealrun::resgroup {
namespace {

namespace fs = std::filesystem;
using testing::slurp;
using testing::spawn_in;
using testing::stop_and_remove;
using testing::unique_id;

std::unique_ptr<ResourceGroup> make_group(const std::string& id, const GroupLimits& limits) {
  return testing::make_group(id, limits, Backend::kCgroupV2);
}

std::string dir_of(const ResourceGroup& g) {
  auto locs = g.locators();
  return locs.empty() ? "" : locs.front();
}

uint64_t pids_current(const std::string& dir) {
  auto v = parse_limit_value(slurp(dir + "/pids.current"), "pids.current");
  return v.ok() ? *v : UINT64_MAX;
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

TEST(CgroupV2Vm, AllocationPastMemoryMaxIsOomKilledWithoutSwap) {
  auto g = make_group(unique_id("oom"), {kUnlimited, 64ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto child = spawn_in(*g, {ALLOC_HELPER, "200"});
  ASSERT_TRUE(child.ok()) << child.error().message();
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->signal, SIGKILL) << st->describe();
  auto r = g->memory_report();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_GE(r->events_oom_kill, 1u);
  EXPECT_GE(r->events_max, 1u);
  ASSERT_TRUE(r->swap_used_bytes.has_value());
  EXPECT_EQ(*r->swap_used_bytes, 0u);
  ASSERT_TRUE(r->peak_bytes.has_value());
  EXPECT_LE(*r->peak_bytes, 64ULL << 20);
  EXPECT_GT(*r->peak_bytes, 32ULL << 20);
  stop_and_remove(*g);
}

TEST(CgroupV2Vm, AllocationOverMemoryHighIsThrottledAndCountedNotKilled) {
  // memory.high has no v1 equivalent; here it is real: going over it raises the "high" event and
  // reclaim pressure, but the job lives on.
  auto g = make_group(unique_id("high"), {32ULL << 20, 256ULL << 20, 0, 64});
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
  auto g = make_group(unique_id("fits"), {96ULL << 20, 128ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto child = spawn_in(*g, {ALLOC_HELPER, "32"});
  ASSERT_TRUE(child.ok());
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->success()) << st->describe();
  EXPECT_EQ(g->memory_report()->events_oom_kill, 0u);
  stop_and_remove(*g);
}

TEST(CgroupV2Vm, ForkBombStopsAtPidsMaxAndIsEmptiedByStop) {
  constexpr uint64_t kMax = 32;
  auto g = make_group(unique_id("bomb"), {kUnlimited, 256ULL << 20, 0, kMax});
  ASSERT_TRUE(g);
  const std::string dir = dir_of(*g);
  auto child = spawn_in(*g, {FORKBOMB_HELPER});
  ASSERT_TRUE(child.ok()) << child.error().message();
  uint64_t highest = 0;
  bool full = poll_until(
      [&] {
        uint64_t cur = pids_current(dir);
        if (cur != UINT64_MAX) highest = std::max(highest, cur);
        return cur != UINT64_MAX && cur >= kMax;
      },
      60000, 20);
  EXPECT_TRUE(full) << "the bomb never filled the group; highest pids.current " << highest;
  ::usleep(300 * 1000);  // let it keep hammering at the limit
  highest = std::max(highest, pids_current(dir));
  EXPECT_EQ(highest, kMax);
  auto events = parse_flat_keyed(slurp(dir + "/pids.events"));
  EXPECT_GT(events["max"], 0u) << "the kernel refused no fork";
  auto s = g->stop(200);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_GE(s->processes_signalled, kMax - 1);
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->signal, 0);
  ASSERT_TRUE(g->remove().ok());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(CgroupV2Vm, SetsidDoubleForkOrphanIsKilledByCgroupKill) {
  auto g = make_group(unique_id("orphan"), {kUnlimited, 256ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  auto child = spawn_in(*g, {ORPHAN_HELPER}, pipe->write_end.get());
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe->write_end.reset();
  // One read: the orphan keeps its stdout (the pipe) open, so there is no end of file to wait for.
  char buf[32] = {};
  ASSERT_GT(::read(pipe->read_end.get(), buf, sizeof buf - 1), 0);
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->success()) << st->describe();
  pid_t orphan = std::stoi(std::string(buf));
  UniqueFd orphan_fd(pidfd_open_raw(orphan, 0));
  ASSERT_TRUE(orphan_fd.valid()) << "orphan " << orphan << " not running";
  EXPECT_NE(slurp("/proc/" + std::to_string(orphan) + "/cgroup")
                .find(fs::path(dir_of(*g)).filename().string()),
            std::string::npos);
  EXPECT_NE(::getsid(orphan), ::getsid(0));  // it left our session
  auto s = g->stop(300);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_EQ(s->processes_signalled, 1u);
  struct pollfd pfd {
    orphan_fd.get(), POLLIN, 0
  };
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1) << "the orphan is still alive";
  ASSERT_TRUE(g->remove().ok());
  EXPECT_FALSE(fs::exists(dir_of(*g)));
}

TEST(CgroupV2Vm, RemoveRefusesWhileTheGroupHasProcesses) {
  auto g = make_group(unique_id("busy"), {kUnlimited, 256ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto sleeper = find_program("sleep");
  ASSERT_TRUE(sleeper.ok());
  auto child = spawn_in(*g, {*sleeper, "1000"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(g->remove().ok());
  EXPECT_TRUE(fs::exists(dir_of(*g)));
  stop_and_remove(*g);
  auto ex = child->wait();
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->signal, SIGTERM);
}

}  // namespace
}  // namespace sealrun::resgroup
