// SPDX-License-Identifier: Apache-2.0
// The jobs every cgroupfs back end must hold, written once and run against each: cgroup v1 on
// this host (cgroup_v1_integration_test.cc) and cgroup v2 in the pure-v2 VM
// (cgroup_v2_vm_test.cc). An allocation past memory.max is OOM-killed without swap, one under it
// succeeds, a fork bomb stops at pids.max and is emptied by stop(), a setsid + double-fork orphan
// that ignores SIGTERM is killed and counted, and remove() refuses a populated group. The test
// programs define ALLOC_HELPER, FORKBOMB_HELPER and ORPHAN_HELPER (tests/resgroup/helpers/).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "containment/resgroup/cgroupfs_io.h"
#include "core/process.h"
#include "core/syscall.h"
#include "tests/resgroup/real_group_support.h"

namespace sealrun::resgroup::testing {

struct BackendUnderTest {
  Backend backend;
  std::vector<std::string> not_applied;  // limits read back as not in force (v1: memory.high)
  // The group directory with the pids.* files (v1: the pids hierarchy's).
  std::function<std::string(const ResourceGroup&)> pids_dir;
  // A directory whose name shows in a member's /proc/<pid>/cgroup.
  std::function<std::string(const ResourceGroup&)> member_dir;

  std::unique_ptr<ResourceGroup> make(const char* what, const GroupLimits& limits) const {
    return make_group(unique_id(what), limits, backend, not_applied);
  }
};

inline uint64_t pids_current(const std::string& dir) {
  auto v = parse_limit_value(slurp(dir + "/pids.current"), "pids.current");
  return v.ok() ? *v : UINT64_MAX;
}

inline void expect_oom_past_memory_max_without_swap(const BackendUnderTest& b) {
  auto g = b.make("oom", {kUnlimited, 64ULL << 20, 0, 64});
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

inline void expect_allocation_under_the_limit_succeeds(const BackendUnderTest& b) {
  auto g = b.make("fits", {96ULL << 20, 128ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto child = spawn_in(*g, {ALLOC_HELPER, "32"});
  ASSERT_TRUE(child.ok());
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->success()) << st->describe();
  EXPECT_EQ(g->memory_report()->events_oom_kill, 0u);
  stop_and_remove(*g);
}

inline void expect_fork_bomb_held_at_pids_max(const BackendUnderTest& b, uint64_t max) {
  auto g = b.make("bomb", {kUnlimited, 256ULL << 20, 0, max});
  ASSERT_TRUE(g);
  const std::string dir = b.pids_dir(*g);
  auto child = spawn_in(*g, {FORKBOMB_HELPER});
  ASSERT_TRUE(child.ok()) << child.error().message();
  uint64_t highest = 0;
  bool full = poll_until(
      [&] {
        uint64_t cur = pids_current(dir);
        if (cur != UINT64_MAX) highest = std::max(highest, cur);
        return cur != UINT64_MAX && cur >= max;
      },
      60000, 20);
  EXPECT_TRUE(full) << "the bomb never filled the group; highest pids.current " << highest;
  // Let it keep hammering at the limit until the kernel has refused forks many times over.
  EXPECT_TRUE(poll_until(
      [&] {
        highest = std::max(highest, pids_current(dir));
        return parse_flat_keyed(slurp(dir + "/pids.events"))["max"] >= 50;
      },
      30000, 20));
  highest = std::max(highest, pids_current(dir));
  EXPECT_EQ(highest, max);
  auto events = parse_flat_keyed(slurp(dir + "/pids.events"));
  EXPECT_GT(events["max"], 0u) << "the kernel refused no fork";
  auto s = g->stop(200);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  EXPECT_GE(s->processes_signalled, max - 1);
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->signal, 0);
  // pids.current still counts the killed processes until their parents reap them (init, for the
  // bomb's orphans; us, for the first one just above).
  EXPECT_TRUE(poll_until([&] { return pids_current(dir) == 0; }, 10000, 20));
  stop_and_remove(*g);
}

// Returns the stop's report, for checks of how the back end did it.
inline StopReport expect_orphan_killed_and_counted(const BackendUnderTest& b) {
  auto g = b.make("orphan", {kUnlimited, 256ULL << 20, 0, 64});
  EXPECT_TRUE(g);
  if (!g) return {};
  auto pipe = make_pipe();
  EXPECT_TRUE(pipe.ok());
  auto child = spawn_in(*g, {ORPHAN_HELPER}, pipe->write_end.get());
  EXPECT_TRUE(child.ok()) << child.error().message();
  if (!child.ok()) return {};
  pipe->write_end.reset();
  // One read: the orphan keeps its stdout (the pipe) open, so there is no end of file to wait for.
  char buf[32] = {};
  EXPECT_GT(::read(pipe->read_end.get(), buf, sizeof buf - 1), 0);
  auto st = child->wait();
  EXPECT_TRUE(st.ok() && st->success());
  pid_t orphan = std::atoi(buf);
  UniqueFd orphan_fd(pidfd_open_raw(orphan, 0));
  EXPECT_TRUE(orphan_fd.valid()) << "orphan " << orphan << " not running";
  EXPECT_NE(slurp("/proc/" + std::to_string(orphan) + "/cgroup")
                .find(std::filesystem::path(b.member_dir(*g)).filename().string()),
            std::string::npos);
  EXPECT_NE(::getsid(orphan), ::getsid(0));  // it left our session
  auto s = g->stop(300);
  EXPECT_TRUE(s.ok()) << s.error().message();
  if (!s.ok()) return {};
  EXPECT_TRUE(s->confirmed);
  EXPECT_EQ(s->processes_signalled, 1u);
  struct pollfd pfd {
    orphan_fd.get(), POLLIN, 0
  };
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1) << "the orphan is still alive";
  EXPECT_TRUE(g->remove().ok());
  for (const auto& l : g->locators()) EXPECT_FALSE(std::filesystem::exists(l)) << l;
  return *s;
}

inline void expect_remove_refused_while_busy(const BackendUnderTest& b) {
  auto g = b.make("busy", {kUnlimited, 256ULL << 20, 0, 64});
  ASSERT_TRUE(g);
  auto sleeper = find_program("sleep");
  ASSERT_TRUE(sleeper.ok());
  auto child = spawn_in(*g, {*sleeper, "1000"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(g->remove().ok());
  for (const auto& l : g->locators()) EXPECT_TRUE(std::filesystem::exists(l)) << l;
  stop_and_remove(*g);
  auto ex = child->wait();
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->signal, SIGTERM);
}

}  // namespace sealrun::resgroup::testing
