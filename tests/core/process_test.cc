// SPDX-License-Identifier: Apache-2.0
#include "core/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/syscall.h"

namespace sealrun {
namespace {

TEST(Spawn, CapturesOutputAndExitCode) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  auto r = run_capture(o, 10000);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status.code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(Spawn, ReportsTheFailingStepAndErrno) {
  SpawnOptions o;
  o.argv = {"/nonexistent/program"};
  auto r = spawn(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err(), ENOENT);
  EXPECT_NE(r.error().message().find("execve"), std::string::npos);
}

TEST(Spawn, ClosesInheritedDescriptorsEvenWithoutCloexec) {
  // Fifty open descriptors, half without O_CLOEXEC (ACCEPTANCE 2): the child sees only 0, 1, 2
  // and the one passed on as fd 3.
  std::vector<int> leaked;
  for (int i = 0; i < 50; ++i)
    leaked.push_back(::open("/dev/null", i % 2 == 0 ? O_RDONLY : O_RDONLY | O_CLOEXEC));
  int passed = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"};
  o.pass_fds = {{passed, 3}};
  auto r = run_capture(o, 10000);
  for (int fd : leaked) ::close(fd);
  ::close(passed);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // ls itself opens one directory fd to list /proc/self/fd.
  EXPECT_EQ(r->out, "0 1 2 3 4 ");
}

TEST(Spawn, TimeoutKills) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  int64_t start = monotonic_ms();
  auto r = run_capture(o, 200);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(monotonic_ms() - start, 5000);
}

TEST(Child, HeldChildRunsOnlyAfterRelease) {
  auto pipe = make_pipe();
  ASSERT_TRUE(pipe.ok());
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo started"};
  o.stdout_fd = pipe->write_end.get();
  o.hold_until_release = true;
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe->write_end.reset();
  ASSERT_EQ(::fcntl(pipe->read_end.get(), F_SETFL, O_NONBLOCK), 0);
  char buf[16];
  // A held child has not exec'ed: it is still our own program image, and has written nothing.
  char self[4096] = {}, child_exe[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  ASSERT_GT(::readlink(fmt::format("/proc/{}/exe", child->pid()).c_str(), child_exe,
                       sizeof child_exe - 1),
            0);
  EXPECT_STREQ(child_exe, self);
  EXPECT_EQ(::read(pipe->read_end.get(), buf, sizeof buf), -1);  // nothing yet
  ASSERT_TRUE(child->release().ok());
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->success());
  EXPECT_EQ(::read(pipe->read_end.get(), buf, sizeof buf), 8);
}

TEST(Child, DroppedChildIsKilledAndReaped) {
  pid_t pid;
  {
    SpawnOptions o;
    o.argv = {"/bin/sleep", "30"};
    auto child = spawn(o);
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  // Reaped: the pid no longer names our child.
  EXPECT_EQ(::kill(pid, 0), -1);
}

TEST(Child, SignalThroughPidfd) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->signal(SIGTERM).ok());
  auto st = child->wait_for(5000);
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(st->has_value());
  EXPECT_EQ((*st)->signal, SIGTERM);
}

// `rebuild --vary kernel,aslr,domain_host`: the personality reaches the program through exec, and
// (as root) the program runs in a UTS namespace of its own with the domain name given, which the
// caller's keeps.
TEST(Spawn, SetsPersonalityAndDomainName) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "cat /proc/self/personality; uname -r; cat /proc/sys/kernel/domainname"};
  o.personality = 0x0060000;  // UNAME26 | ADDR_NO_RANDOMIZE
  if (::geteuid() == 0) o.domainname = "spawn-test.invalid";
  auto r = run_capture(o, 10000);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status.code, 0) << r->err;
  EXPECT_EQ(r->out.rfind("00060000\n2.6.", 0), 0u) << r->out;
  if (::geteuid() == 0) {
    EXPECT_NE(r->out.find("\nspawn-test.invalid\n"), std::string::npos) << r->out;
    char mine[256] = {};
    ASSERT_EQ(::getdomainname(mine, sizeof mine - 1), 0);
    EXPECT_STRNE(mine, "spawn-test.invalid");
  }
}

}  // namespace
}  // namespace sealrun

namespace sealrun {
namespace {

TEST(Spawn, ChildStartsWithDefaultSignalsEvenIfCallerBlocksOrIgnoresThem) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  auto previous = ::signal(SIGPIPE, SIG_IGN);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status"};
  auto r = run_capture(o, 10000);
  ::signal(SIGPIPE, previous);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // sh itself ignores nothing it was not told to; the blocked mask must be empty.
  EXPECT_NE(r->out.find("SigBlk:\t0000000000000000"), std::string::npos) << r->out;
  auto ign = r->out.find("SigIgn:\t");
  ASSERT_NE(ign, std::string::npos) << r->out;
  uint64_t ignored = std::stoull(r->out.substr(ign + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0u) << r->out;
}

}  // namespace
}  // namespace sealrun

namespace sealrun {
namespace {

// Spawns `inner` from a forked intermediate parent (the "middle"), so that the middle can be
// killed while the spawned grandchild runs. `pidfd` watches the grandchild.
struct UnderMiddle {
  pid_t middle = -1;
  int pidfd = -1;
};
UnderMiddle spawn_under_middle(const SpawnOptions& inner) {
  auto pipe = make_pipe();
  if (!pipe.ok()) return {};
  pid_t middle = ::fork();
  if (middle == 0) {
    auto child = spawn(inner);
    if (!child.ok()) ::_exit(1);
    pid_t pid = child->pid();
    (void)!::write(pipe->write_end.get(), &pid, sizeof pid);
    ::pause();
    ::_exit(0);
  }
  pid_t grandchild = 0;
  if (::read(pipe->read_end.get(), &grandchild, sizeof grandchild) != sizeof grandchild) return {};
  return {middle, pidfd_open_raw(grandchild, 0)};
}

// Kills the middle; true when the grandchild then exits within 5 s (its death signal came).
bool grandchild_dies_with_middle(const UnderMiddle& u) {
  ::kill(u.middle, SIGKILL);
  ::waitpid(u.middle, nullptr, 0);
  struct pollfd p {
    u.pidfd, POLLIN, 0
  };
  bool died = ::poll(&p, 1, 5000) == 1;
  ::close(u.pidfd);
  return died;
}

// prctl(2): a credential change clears the parent-death signal, so it must be armed after the
// uid/gid drop. Checked by reading it back in the child after dropping to nobody.
TEST(Spawn, ParentDeathSignalSurvivesTheIdentityDrop) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change identity";
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "grep -E '^(Uid|PPid)' /proc/self/status"};
  o.uid = 65534;
  o.gid = 65534;
  o.die_with_parent = true;
  // The death signal itself is not visible in /proc; observe it by killing an intermediate parent.
  SpawnOptions inner;
  inner.argv = {"/bin/sleep", "30"};
  inner.uid = 65534;
  inner.gid = 65534;
  inner.die_with_parent = true;
  UnderMiddle u = spawn_under_middle(inner);
  ASSERT_GE(u.pidfd, 0);
  EXPECT_TRUE(grandchild_dies_with_middle(u)) << "the child outlived its parent: PDEATHSIG lost";
  auto r = run_capture(o, 10000);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->out.find("Uid:\t65534"), std::string::npos);
}

// wait(&usage) reports the child's own CPU time (wait4(2)'s rusage), which `sealrun runner`
// returns to bb_worker.
TEST(Child, WaitReportsResourceUsage) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  struct rusage usage {};
  auto st = child->wait_for(60000, &usage);
  ASSERT_TRUE(st.ok()) << st.error().message();
  ASSERT_TRUE(st->has_value());
  EXPECT_TRUE((*st)->success());
  EXPECT_GT(usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec, 0);
  EXPECT_GT(usage.ru_maxrss, 0);
}

// Reads a whole small file ("" if it cannot).
std::string slurp(const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[64] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// The parent-death signal is configurable: SIGTERM lets a child that handles it stop cleanly.
TEST(Spawn, DeathSignalIsTheOneAsked) {
  char mark[] = "/tmp/sealrun-deathsig-XXXXXX";
  int mark_fd = ::mkstemp(mark);
  ASSERT_GE(mark_fd, 0);
  ::close(mark_fd);
  SpawnOptions inner;
  // The trap runs only for a catchable signal: SIGKILL would leave no "TERM" in the mark.
  inner.argv = {"/bin/sh", "-c",
                std::string("trap 'kill $!; echo TERM >> ") + mark +
                    "; exit 0' TERM; echo ready > " + mark + "; sleep 30 & wait"};
  inner.die_with_parent = true;
  inner.death_signal = SIGTERM;
  UnderMiddle u = spawn_under_middle(inner);
  ASSERT_GE(u.pidfd, 0);
  // Only once the trap is in place does the parent die; before it, SIGTERM would just kill.
  int64_t deadline = monotonic_ms() + 10000;
  while (slurp(mark) != "ready\n" && monotonic_ms() < deadline) ::usleep(10000);
  ASSERT_EQ(slurp(mark), "ready\n");
  EXPECT_TRUE(grandchild_dies_with_middle(u)) << "the child outlived its parent";
  EXPECT_EQ(slurp(mark), "ready\nTERM\n");
  ::unlink(mark);
}

}  // namespace
}  // namespace sealrun
