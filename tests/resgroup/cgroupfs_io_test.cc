// SPDX-License-Identifier: Apache-2.0
// Unit tests of the cgroupfs seam's pure parts: /proc/<pid>/cgroup, limit values, keyed files, pid
// lists, the names sealrun gives its groups, path hygiene, and process liveness by starttime.
#include "containment/resgroup/cgroupfs_io.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/process.h"
#include "core/run_id.h"

namespace sealrun::resgroup {
namespace {

TEST(ProcCgroup, ParsesHybridLayout) {
  auto lines = parse_proc_cgroup(
      "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/x\n0::/\n");
  ASSERT_TRUE(lines.ok()) << lines.error().message();
  EXPECT_EQ(path_of(*lines, "memory"), "/process_api/abc");
  EXPECT_EQ(path_of(*lines, "pids"), "/");
  EXPECT_EQ(path_of(*lines, "cpuacct"), "/x");
  EXPECT_EQ(path_of(*lines, ""), "/");
  EXPECT_FALSE(path_of(*lines, "freezer").has_value());
}

TEST(ProcCgroup, RejectsMalformedLines) {
  for (const char* bad : {"4:memory\n", "x:memory:/a\n", "4:memory:relative\n"})
    EXPECT_FALSE(parse_proc_cgroup(bad).ok()) << bad;
}

TEST(LimitValue, MaxAndNumbers) {
  EXPECT_EQ(*parse_limit_value("max\n", "f"), kUnlimited);
  EXPECT_EQ(*parse_limit_value("67108864\n", "f"), 67108864u);
  auto bad = parse_limit_value("12k", "memory.max");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("memory.max"), std::string::npos);
}

TEST(FlatKeyed, MemoryEvents) {
  auto m = parse_flat_keyed("low 0\nhigh 3\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
  EXPECT_EQ(m["high"], 3u);
  EXPECT_EQ(m["max"], 7u);
  EXPECT_EQ(m["oom_kill"], 1u);
  auto oc = parse_flat_keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  EXPECT_EQ(oc["oom_kill"], 2u);
}

TEST(PidList, ParsesAndRejects) {
  EXPECT_EQ(parse_pid_list("12\n34\n", "x")->size(), 2u);
  EXPECT_TRUE(parse_pid_list("", "x")->empty());
  EXPECT_FALSE(parse_pid_list("12\nabc\n", "x").ok());
  EXPECT_FALSE(parse_pid_list("0\n", "x").ok());
}

TEST(GroupName, RoundTripsAndRejectsForeignNames) {
  std::string n = group_dir_name("run.1-a", 4242, "98765");
  EXPECT_EQ(n, "sealrun-run.1-a.4242.98765");
  auto g = parse_group_dir_name(n);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->run_id, "run.1-a");
  EXPECT_EQ(g->creator_pid, 4242);
  EXPECT_EQ(g->creator_start, "98765");
  for (const char* bad : {"sealrun-try-15555", "other-x.1.2", "sealrun-.1.2", "sealrun-x.0.2",
                          "sealrun-x.1.abc", "sealrun-x/y.1.2", "user.slice"})
    EXPECT_FALSE(parse_group_dir_name(bad).has_value()) << bad;
}

TEST(RunId, Charset) {
  EXPECT_TRUE(is_valid_run_id("build-42_a.b"));
  for (const char* bad : {"", ".", "..", "a/b", "a b", "a\nb", "ä"})
    EXPECT_FALSE(is_valid_run_id(bad)) << bad;
  EXPECT_FALSE(is_valid_run_id(std::string(101, 'a')));
}

TEST(CleanPath, RefusesDotDot) {
  EXPECT_EQ(split_clean_path("/a/b/", "p")->size(), 2u);
  EXPECT_TRUE(split_clean_path("/", "p")->empty());
  EXPECT_FALSE(split_clean_path("/a/../b", "p").ok());
  EXPECT_FALSE(split_clean_path("a//b", "p").ok());
  EXPECT_FALSE(split_clean_path("./a", "p").ok());
}

TEST(Liveness, OwnProcessAliveOnlyWithItsStarttime) {
  auto start = process_starttime(::getpid());
  ASSERT_TRUE(start.ok()) << start.error().message();
  EXPECT_TRUE(process_is_alive(::getpid(), *start));
  EXPECT_FALSE(process_is_alive(::getpid(), *start + "1"));
}

TEST(Liveness, ZombieAndReapedChildAreDead) {
  auto exe = find_program("true");
  ASSERT_TRUE(exe.ok());
  SpawnOptions o;
  o.argv = {*exe};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  pid_t pid = child->pid();
  auto start = process_starttime(pid);
  ASSERT_TRUE(start.ok());
  // Not reaped yet: a zombie once `true` exited.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(process_is_alive(pid, *start));
  ASSERT_TRUE(child->wait().ok());
  EXPECT_FALSE(process_is_alive(pid, *start));
}

TEST(SignalMembers, NeverSignalsANonMember) {
  // Our own pid, with a membership check that says "not in the group": nothing is signalled (we
  // would die of SIGKILL otherwise).
  int calls = 0;
  uint64_t n = signal_members("/proc", {::getpid()}, SIGKILL, [&](std::string_view) {
    ++calls;
    return false;
  });
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace sealrun::resgroup
