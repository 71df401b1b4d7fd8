// SPDX-License-Identifier: Apache-2.0
// /proc parsing against a fake proc tree (awkward comm names, missing fields), and ProcessRef
// against real processes: it pins one, tells it from a recorded {pid, starttime} of another, sees
// it exit, and refuses a pid that runs nothing.
#include "core/proc.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/process.h"
#include "core/process_ref.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::TempDir;
using testing::write_text;

void fake_process(const TempDir& proc, pid_t pid, const std::string& stat,
                  const std::string& status = "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n") {
  std::filesystem::create_directories(proc / std::to_string(pid));
  write_text(proc / (std::to_string(pid) + "/stat"), stat);
  write_text(proc / (std::to_string(pid) + "/status"), status);
}

std::string stat_line(pid_t pid, const std::string& comm, char state, const std::string& start) {
  // Fields 3..22 after the comm: state, then 18 fillers, then starttime.
  std::string s = std::to_string(pid) + " (" + comm + ") " + state;
  for (int i = 0; i < 18; ++i) s += " 0";
  return s + " " + start + " 0 0\n";
}

TEST(Proc, StatFieldsAreCountedAfterTheLastParenthesis) {
  TempDir proc;
  fake_process(proc, 42, stat_line(42, "a) (b) 7 8", 'S', "123456"));
  auto st = read_proc_stat(42, proc.str());
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->starttime, "123456");
  EXPECT_TRUE(process_is_alive(42, "123456", proc.str()));
  EXPECT_FALSE(process_is_alive(42, "123457", proc.str())) << "another start: a recycled pid";
  EXPECT_FALSE(process_is_alive(43, "123456", proc.str()));
  fake_process(proc, 44, stat_line(44, "zombie", 'Z', "5"));
  EXPECT_FALSE(process_is_alive(44, "5", proc.str())) << "a zombie is dead";
}

TEST(Proc, MalformedStatAndStatusAreErrorsNotGuesses) {
  TempDir proc;
  fake_process(proc, 7, "7 (short) S 1 2\n", "Name:\tx\n");
  EXPECT_FALSE(read_proc_stat(7, proc.str()).ok());
  EXPECT_FALSE(process_real_uid(7, proc.str()).ok());
  fake_process(proc, 8, stat_line(8, "x", 'R', "notanumber"));
  EXPECT_FALSE(read_proc_stat(8, proc.str()).ok());
  fake_process(proc, 9, stat_line(9, "x", 'R', "1"), "Name:\tx\nUid:\t1234\t0\t0\t0\n");
  auto uid = process_real_uid(9, proc.str());
  ASSERT_TRUE(uid.ok());
  EXPECT_EQ(*uid, 1234u);
}

TEST(Proc, ChildrenOfARealProcess) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30 & wait"};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  // Wait until the shell has started both sleeps (a condition, not a fixed sleep).
  std::vector<pid_t> kids;
  for (int i = 0; i < 500 && kids.size() < 2; ++i) {
    kids = process_children(child->pid());
    if (kids.size() < 2) ::usleep(10 * 1000);
  }
  EXPECT_EQ(kids.size(), 2u);
  EXPECT_EQ(process_descendants(child->pid()).size(), 2u);
  for (pid_t k : kids) ::kill(k, SIGKILL);
  child->kill_and_reap();
}

TEST(ProcessRef, PinsARunningProcessAndSeesItExit) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok());
  auto ref = ProcessRef::from_pid(child->pid());
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  auto start = process_starttime(child->pid());
  ASSERT_TRUE(start.ok());
  EXPECT_TRUE(ref->is_same(child->pid(), *start));
  EXPECT_FALSE(ref->is_same(child->pid(), *start + "0")) << "same pid, another start";
  EXPECT_FALSE(ref->exited_within(0));
  ASSERT_TRUE(ref->signal(SIGKILL).ok());
  EXPECT_TRUE(ref->exited_within(5000));
  // Signalling an exited (not yet reaped) process is not an error: there is nothing to do.
  EXPECT_TRUE(ref->signal(SIGTERM).ok());
  child->kill_and_reap();
}

TEST(ProcessRef, RefusesAPidThatRunsNothing) {
  SpawnOptions o;
  o.argv = {"/bin/true"};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok());
  pid_t pid = child->pid();
  ASSERT_TRUE(child->wait().ok());  // reaped: the pid runs nothing now (until reused)
  EXPECT_FALSE(ProcessRef::from_pid(pid).ok());
  EXPECT_FALSE(ProcessRef::from_pid(-1).ok());
  EXPECT_TRUE(pidfd_exited_within(-1, 0)) << "no pidfd counts as exited";
}

}  // namespace
}  // namespace sealrun
