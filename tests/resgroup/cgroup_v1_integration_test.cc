// Integration tests of the cgroup v1 back end on this host's real hierarchies (TESTBED.md): the
// groups are made under our own memory, pids and freezer groups, real jobs join them through
// join_fds() before exec, and the kernel enforces the limits: an allocation past memory.max is
// OOM-killed without swapping, a fork bomb stops at pids.max, a setsid + double-fork orphan that
// ignores SIGTERM is killed by the freezer stop, and remove() leaves no directory behind.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "containment/resgroup/cgroup_v1.h"
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

std::string locator_in(const ResourceGroup& g, const std::string& hierarchy) {
  for (const auto& l : g.locators())
    if (l.find("/" + hierarchy + "/") != std::string::npos) return l;
  return "";
}

// On v1 memory.high has no equivalent: read back as not applied (the receipt says so).
std::unique_ptr<ResourceGroup> make_group(const std::string& id, const GroupLimits& limits) {
  return testing::make_group(id, limits, Backend::kCgroupV1, {"memory_high_bytes"});
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

TEST(CgroupV1Real, AllocationPastMemoryMaxIsOomKilledWithoutSwap) {
  auto g = make_group(unique_id("oom"), {48ULL << 20, 64ULL << 20, 0, 64});
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

TEST(CgroupV1Real, AllocationUnderTheLimitSucceeds) {
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

TEST(CgroupV1Real, ForkBombStopsAtPidsMaxAndIsEmptiedByStop) {
  constexpr uint64_t kMax = 64;
  auto g = make_group(unique_id("bomb"), {kUnlimited, 256ULL << 20, 0, kMax});
  ASSERT_TRUE(g);
  std::string pids_dir = locator_in(*g, "pids");
  auto child = spawn_in(*g, {FORKBOMB_HELPER});
  ASSERT_TRUE(child.ok()) << child.error().message();
  uint64_t highest = 0;
  bool full = poll_until(
      [&] {
        auto cur = parse_limit_value(slurp(pids_dir + "/pids.current"), "pids.current");
        if (cur.ok()) highest = std::max(highest, *cur);
        return cur.ok() && *cur >= kMax;
      },
      30000, 20);
  EXPECT_TRUE(full) << "the bomb never filled the group; highest pids.current " << highest;
  ::usleep(300 * 1000);  // let it keep hammering at the limit
  highest = std::max(highest, *parse_limit_value(slurp(pids_dir + "/pids.current"), "x"));
  EXPECT_EQ(highest, kMax);
  auto events = parse_flat_keyed(slurp(pids_dir + "/pids.events"));
  EXPECT_GT(events["max"], 0u) << "the kernel refused no fork";
  auto s = g->stop(200);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_GE(s->processes_signalled, kMax - 1);
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->signal, 0);
  // pids.current still counts the killed processes until their parents reap them (init, for the
  // bomb's orphans; us, for the first one just above).
  EXPECT_TRUE(poll_until(
      [&] { return *parse_limit_value(slurp(pids_dir + "/pids.current"), "x") == 0; }, 10000, 20));
  stop_and_remove(*g);
}

TEST(CgroupV1Real, SetsidDoubleForkOrphanIsKilledAndCounted) {
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
  std::string out_text(buf);
  auto* out = &out_text;
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->success()) << st->describe();
  pid_t orphan = std::stoi(*out);
  UniqueFd orphan_fd(pidfd_open_raw(orphan, 0));
  ASSERT_TRUE(orphan_fd.valid()) << "orphan " << orphan << " not running";
  EXPECT_NE(slurp(fmt::format("/proc/{}/cgroup", orphan))
                .find(fs::path(locator_in(*g, "memory")).filename().string()),
            std::string::npos);
  EXPECT_NE(::getsid(orphan), ::getsid(0));  // it left our session
  auto s = g->stop(300);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_EQ(s->processes_signalled, 1u);
  bool killed = false;
  for (const auto& a : s->actions) killed |= a.rfind("KILL 1", 0) == 0;
  EXPECT_TRUE(killed) << "SIGTERM is ignored by the orphan: the freezer KILL must have ended it";
  struct pollfd pfd {
    orphan_fd.get(), POLLIN, 0
  };
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1) << "the orphan is still alive";
  ASSERT_TRUE(g->remove().ok());
  for (const auto& l : g->locators()) EXPECT_FALSE(fs::exists(l));
}

TEST(CgroupV1Real, RemoveRefusesWhileTheGroupHasProcesses) {
  auto g = make_group(unique_id("busy"), {kUnlimited, 256ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto sleeper = find_program("sleep");
  ASSERT_TRUE(sleeper.ok());
  auto child = spawn_in(*g, {*sleeper, "1000"});
  ASSERT_TRUE(child.ok());
  auto st = g->remove();
  EXPECT_FALSE(st.ok());
  for (const auto& l : g->locators()) EXPECT_TRUE(fs::exists(l)) << l;
  stop_and_remove(*g);
  auto ex = child->wait();
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->signal, SIGTERM);
}

}  // namespace
}  // namespace sealrun::resgroup
