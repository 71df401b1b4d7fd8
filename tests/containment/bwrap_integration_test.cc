// SPDX-License-Identifier: Apache-2.0
// docs/acceptance.md cases 1-9 and 22 and the wall-clock stop, against real rootless bubblewrap:
// each test runs the static `hostile` helper (tests/containment/jobs/hostile.c) inside a sandbox
// started by BwrapMechanism and checks every attempt failed — with a positive control in the same
// run where one makes sense (e.g. /out IS writable), so a broken helper cannot pass silently.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "containment/caps.h"
#include "containment/resgroup/resource_group.h"
#include "core/job_user.h"
#include "core/syscall.h"
#include "tests/containment/bwrap_job.h"
#include "tests/support/raw_pty.h"

namespace sealrun {
namespace {

using testing::BwrapFixture;

// Every listed key must be present and not "ok" (the call failed).
void expect_all_failed(const testing::JobRun& r, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = r.kv.find(k);
    ASSERT_NE(it, r.kv.end()) << k << " not reported; stdout:\n" << r.out << "\nstderr:\n" << r.err;
    EXPECT_NE(it->second, "ok") << k << " SUCCEEDED inside the sandbox";
  }
}

// ACCEPTANCE 1: TIOCSTI on a pty given as the job's stdin/stdout.
TEST(BwrapAcceptance, Item1_TiocstiOnAPtyInjectsNothing) {
  BwrapFixture fx;
  auto pty = testing::open_raw_pty();
  const int slave = pty.slave.get();
  auto r = fx.run(fx.spec({"tiocsti"}), nullptr, JobIo{slave, slave, -1});
  EXPECT_TRUE(r.exit.status.success()) << r.exit.status.describe() << r.err;
  // The report came through the pty.
  std::string out = testing::terminal_output(pty.master.get());
  ASSERT_FALSE(out.empty());
  auto kv = testing::parse_kv(out);
  for (const char* k : {"tiocsti_stdin", "tiocsti_stdout", "tiocsti_highbits", "tioclinux"}) {
    ASSERT_TRUE(kv.count(k)) << k;
    EXPECT_NE(kv[k], "ok") << k;
  }
  // Nothing was pushed into the terminal's input queue.
  EXPECT_EQ(testing::pending_input(slave), 0);
}

// ACCEPTANCE 2: 50 extra descriptors in the controller, half without CLOEXEC.
TEST(BwrapAcceptance, Item2_InheritedDescriptorsDoNotReachTheJob) {
  BwrapFixture fx;
  std::vector<UniqueFd> extra;
  for (int i = 0; i < 50; ++i) {
    int fd = ::open(i % 2 ? "/etc/passwd" : "/dev/null", O_RDONLY | (i % 2 ? 0 : O_CLOEXEC));
    ASSERT_GE(fd, 0);
    extra.emplace_back(fd);
  }
  auto r = fx.run(fx.spec({"fds"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  // Documented: 0, 1, 2 only (bwrap's status and seccomp descriptors are closed before exec).
  EXPECT_EQ(r.kv["fds"], "0,1,2") << r.out;
}

// ACCEPTANCE 3: writes to /proc/1/exe, the toolchain, the source and / fail; /out works.
TEST(BwrapAcceptance, Item3_ReadOnlyEverywhereButTheAdmittedOutput) {
  BwrapFixture fx;
  std::string before = testing::read_text(fx.toolchain_dir() + "/bin/cc");
  auto r = fx.run(
      fx.spec({"write", "/proc/1/exe", "/toolchain", "/toolchain/bin/cc", "/src", "/src/hostile",
               "/", "/usr", "/usr/bin", "/etc", "/etc/passwd", "/out", "/tmp"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  expect_all_failed(r, {"write:/proc/1/exe", "write:/toolchain", "write:/toolchain/bin/cc",
                        "write:/src", "write:/src/hostile", "write:/", "write:/usr",
                        "write:/usr/bin", "write:/etc", "write:/etc/passwd"});
  // Positive controls: the admitted output and the private /tmp are writable.
  EXPECT_EQ(r.kv["write:/out"], "ok") << r.out << r.err;
  EXPECT_EQ(r.kv["write:/tmp"], "ok") << r.out;
  EXPECT_EQ(testing::read_text(fx.toolchain_dir() + "/bin/cc"), before);
  EXPECT_FALSE(std::filesystem::exists(fx.src_dir() + "/sealrun-escape"));
}

// ACCEPTANCE 4: no new user namespace, by any route.
TEST(BwrapAcceptance, Item4_NoUserNamespaces) {
  BwrapFixture fx;
  auto r = fx.run(fx.spec({"userns"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  expect_all_failed(r, {"unshare_user", "unshare_user_mount", "clone_newuser", "clone_newns",
                        "unshare_user_i386"});
  ASSERT_TRUE(r.kv.count("unshare_U_exit")) << "util-linux unshare(1) should be in /usr/bin";
  EXPECT_NE(r.kv["unshare_U_exit"], "0");
  EXPECT_NE(r.kv["unshare_Ur_exit"], "0");
}

// ACCEPTANCE 5: mount, setns into PID 1's namespaces, ptrace PID 1.
TEST(BwrapAcceptance, Item5_NoMountSetnsOrPtrace) {
  BwrapFixture fx;
  auto r = fx.run(fx.spec({"mount"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  expect_all_failed(
      r, {"mount_tmpfs", "setns_user", "setns_mnt", "setns_pid", "setns_net", "setns_ipc",
          "setns_uts", "setns_cgroup", "ptrace_attach_1", "ptrace_traceme"});
}

// ACCEPTANCE 6: keyring, userfaultfd, io_uring, bpf, perf.
TEST(BwrapAcceptance, Item6_KernelAttackSurfaceDenied) {
  BwrapFixture fx;
  auto r = fx.run(fx.spec({"kernel"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  expect_all_failed(r, {"keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup", "bpf",
                        "perf_event_open"});
  // Denied by the seccomp policy, not by accident of arguments.
  for (const char* k : {"keyctl", "add_key", "userfaultfd", "io_uring_setup", "perf_event_open"})
    EXPECT_EQ(r.kv[k], "EPERM") << k;
}

// ACCEPTANCE 7: no capabilities, no_new_privs; a setuid-root binary gains nothing.
TEST(BwrapAcceptance, Item7_NoPrivilegesEvenThroughSetuid) {
  BwrapFixture fx;
  auto r = fx.run(fx.spec({"status"}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  EXPECT_EQ(r.kv["NoNewPrivs"], "1");
  for (const char* k : {"CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"})
    EXPECT_EQ(r.kv[k], "0000000000000000") << k;
  EXPECT_EQ(r.kv["Seccomp"], "2");
  EXPECT_NE(r.kv["euid"], "0");

  // A setuid-root copy of the helper, bound into the job.
  std::string suid = fx.dir() / "suid";
  std::filesystem::create_directory(suid);
  ::chmod(suid.c_str(), 0755);
  std::filesystem::copy_file(SEALRUN_HOSTILE_PATH, suid + "/hostile");
  ASSERT_EQ(::chown((suid + "/hostile").c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod((suid + "/hostile").c_str(), 04755), 0);
  auto spec = fx.spec({"status"});
  spec.argv[0] = "/suid/hostile";
  spec.mounts.push_back({suid, "/suid", MountSpec::Access::kReadOnly});
  auto s = fx.run(spec);
  // Either exec is refused or it runs unprivileged: never euid 0 or a capability.
  if (s.kv.count("euid")) {
    EXPECT_NE(s.kv["euid"], "0");
    EXPECT_EQ(s.kv["CapEff"], "0000000000000000");
    EXPECT_EQ(s.kv["CapPrm"], "0000000000000000");
  } else {
    EXPECT_FALSE(s.exit.status.success());
  }
}

// ACCEPTANCE 8: no route out, no host loopback listener, no host abstract socket.
TEST(BwrapAcceptance, Item8_NoNetworkNoHostSockets) {
  BwrapFixture fx;
  UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in lo{};
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(tcp.get(), reinterpret_cast<sockaddr*>(&lo), sizeof lo), 0);
  ASSERT_EQ(::listen(tcp.get(), 4), 0);
  socklen_t len = sizeof lo;
  ::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&lo), &len);
  std::string abstract = "sealrun-bwrap-test-" + std::to_string(::getpid());
  UniqueFd unix_sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract.data(), abstract.size());
  socklen_t un_len = static_cast<socklen_t>(sizeof(sa_family_t) + 1 + abstract.size());
  ASSERT_EQ(::bind(unix_sock.get(), reinterpret_cast<sockaddr*>(&un), un_len), 0);
  ASSERT_EQ(::listen(unix_sock.get(), 4), 0);

  auto r = fx.run(fx.spec({"connect", std::to_string(ntohs(lo.sin_port)), abstract}));
  EXPECT_TRUE(r.exit.status.success()) << r.err;
  EXPECT_EQ(r.kv["route_outside"], "ENETUNREACH") << r.out;
  expect_all_failed(r, {"connect_host_loopback", "connect_abstract"});
  EXPECT_EQ(r.kv["interfaces"], "1") << "only lo";
  // Nobody knocked on the host's sockets.
  EXPECT_LT(::accept(tcp.get(), nullptr, nullptr), 0);
  EXPECT_LT(::accept(unix_sock.get(), nullptr, nullptr), 0);
}

// ACCEPTANCE 9: a fork bomb hits the pids limit of the job's resource group, and the group is
// empty afterwards.
TEST(BwrapAcceptance, Item9_ForkBombHitsThePidsLimit) {
  BwrapFixture fx;
  auto spec = fx.spec({"forkbomb", "5000"});
  spec.required.insert(Dimension::kProcessCount);
  resgroup::GroupLimits limits;
  limits.pids_max = 64;
  limits.memory_max_bytes = 512ULL << 20;
  limits.memory_high_bytes = 512ULL << 20;
  auto group = resgroup::create_group(spec.run_id, limits);
  ASSERT_TRUE(group.ok()) << group.error().message();
  auto r = fx.run(spec, group->get());
  EXPECT_TRUE(r.exit.status.success()) << r.exit.status.describe() << r.err;
  ASSERT_TRUE(r.kv.count("forked")) << r.out << r.err;
  EXPECT_LT(std::stol(r.kv["forked"]), 64);
  EXPECT_GT(std::stol(r.kv["forked"]), 10);
  EXPECT_EQ(r.kv["fork_error"], "EAGAIN");
  auto stop = (*group)->stop(1000);
  ASSERT_TRUE(stop.ok()) << stop.error().message();
  EXPECT_TRUE(stop->confirmed);
  EXPECT_TRUE((*group)->remove().ok());
}

// ACCEPTANCE 22: bwrap missing, enforcing mode: refused, nothing spawned, the error names the
// dimensions and the mechanism.
TEST(BwrapAcceptance, Item22_MissingBwrapRefusesAndSpawnsNothing) {
  BwrapOptions options;
  options.bwrap_path = "/nonexistent/sealrun-test/bwrap";
  BwrapMechanism missing(options);
  auto probe = missing.probe();
  EXPECT_FALSE(probe.available);
  EXPECT_NE(probe.unavailable_reason.find("/nonexistent/sealrun-test/bwrap"), std::string::npos);
  BwrapFixture fx;
  auto spec = fx.spec({"status"});
  std::vector<Mechanism*> mechs{&missing};
  auto before = process_descendants(::getpid());
  auto grant = acquire_grant(spec, mechs, {});
  ASSERT_FALSE(grant.ok());
  std::string msg = grant.error().message();
  EXPECT_NE(msg.find("bwrap"), std::string::npos) << msg;
  EXPECT_NE(msg.find("filesystem"), std::string::npos) << msg;
  EXPECT_NE(msg.find("network"), std::string::npos) << msg;
  // A hand-made grant is refused at spawn as well.
  Grant forged;
  forged.mechanism = "bwrap";
  forged.spec = spec;
  forged.requested = spec.requested;
  forged.required = spec.required;
  forged.enforced = spec.required;
  forged.degraded = forged.requested - forged.enforced;
  EXPECT_FALSE(missing.spawn(forged, nullptr, {}).ok());
  EXPECT_EQ(process_descendants(::getpid()), before) << "a process was spawned";
}

// Wall clock: TERM first; a job that ignores TERM is KILLed after the grace; nothing survives,
// including children that left the job's session.
TEST(BwrapWallClock, TermThenKillAndNothingSurvives) {
  BwrapFixture fx;
  for (bool ignore_term : {false, true}) {
    SCOPED_TRACE(ignore_term ? "job ignores TERM" : "job obeys TERM");
    std::vector<std::string> args = {"sleep", "60", "children", "3"};
    if (ignore_term) args.push_back("ignore-term");
    auto spec = fx.spec(args);
    spec.wall_clock_ms = 1500;
    spec.stop_grace_ms = 700;
    std::vector<UniqueFd> watched;
    int64_t start = monotonic_ms();
    auto r = fx.run(spec, nullptr, {}, [&](ContainedJob& job) {
      // Wait until the job and its children exist, then keep a pidfd of every process.
      for (int i = 0; i < 100 && process_descendants(job.pid()).size() < 5; ++i) ::usleep(20000);
      for (pid_t p : process_descendants(job.pid())) {
        int fd = pidfd_open_raw(p, 0);
        if (fd >= 0) watched.emplace_back(fd);
      }
    });
    int64_t took = monotonic_ms() - start;
    EXPECT_TRUE(r.exit.timed_out);
    EXPECT_FALSE(r.exit.status.success());
    EXPECT_EQ(r.exit.status.signal, ignore_term ? SIGKILL : SIGTERM) << r.exit.status.describe();
    EXPECT_LT(took, 15000);
    EXPECT_GE(watched.size(), 5u) << "bwrap init, the job and 3 children";
    for (auto& fd : watched) EXPECT_TRUE(testing::pidfd_has_exited(fd.get(), 3000));
  }
}

// The controller dies (SIGKILL, no cleanup): bwrap gets the parent-death signal (re-armed by
// setpriv after the drop to the job user), and with it the sandbox's PID 1 and every process in
// the pid namespace, including children that left the job's session.
TEST(BwrapControllerDeath, NothingOutlivesAKilledController) {
  BwrapFixture fx;
  auto spec = fx.spec({"sleep", "60", "children", "2", "ignore-term"});
  int report[2];
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  pid_t controller = ::fork();
  if (controller == 0) {
    std::vector<Mechanism*> mechs{&fx.mechanism()};
    auto grant = acquire_grant(spec, mechs, {});
    if (!grant.ok()) ::_exit(10);
    auto job = fx.mechanism().spawn(*grant, nullptr, {});
    if (!job.ok()) ::_exit(11);
    pid_t bwrap = (*job)->pid();
    (void)!::write(report[1], &bwrap, sizeof bwrap);
    for (;;) ::pause();
  }
  ::close(report[1]);
  pid_t bwrap = -1;
  ASSERT_EQ(::read(report[0], &bwrap, sizeof bwrap), static_cast<ssize_t>(sizeof bwrap));
  ::close(report[0]);
  std::vector<UniqueFd> watched;
  for (int i = 0; i < 100 && process_descendants(bwrap).size() < 4; ++i) ::usleep(20000);
  watched.emplace_back(pidfd_open_raw(bwrap, 0));
  for (pid_t p : process_descendants(bwrap)) watched.emplace_back(pidfd_open_raw(p, 0));
  EXPECT_GE(watched.size(), 5u) << "bwrap, its init, the job and 2 children";
  ::kill(controller, SIGKILL);
  int status = 0;
  ::waitpid(controller, &status, 0);
  int64_t start = monotonic_ms();
  for (auto& fd : watched) {
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(testing::pidfd_has_exited(fd.get(), 2000));
  }
  EXPECT_LT(monotonic_ms() - start, 1500) << "within about a second";
}

// A controller that is not root runs bwrap directly (no staging chain, no setpriv): the same
// boundary, checked from a child that has dropped to the job user.
TEST(BwrapUnprivilegedController, SameBoundaryWithoutRoot) {
  auto user = lookup_job_user(testing::test_job_user_name());
  ASSERT_TRUE(user.ok());
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.str().c_str(), 0711), 0);
  ASSERT_TRUE(prepare_owned_dir(dir / "src", *user).ok());
  ASSERT_TRUE(prepare_owned_dir(dir / "out", *user).ok());
  std::filesystem::copy_file(SEALRUN_HOSTILE_PATH, dir / "src/hostile");
  ASSERT_EQ(::chown((dir / "src/hostile").c_str(), user->uid, user->gid), 0);
  ASSERT_EQ(::chmod((dir / "src/hostile").c_str(), 0755), 0);
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0)
      ::_exit(20);
    ContainmentSpec spec;
    spec.run_id = "bwrap-unprivileged";
    spec.argv = {"/src/hostile", "write", "/src", "/src/hostile", "/", "/out"};
    spec.mounts = {{dir / "src", "/src", MountSpec::Access::kReadOnly},
                   {dir / "out", "/out", MountSpec::Access::kWritable}};
    spec.requested = DimensionSet::all();
    spec.required = {Dimension::kFilesystem, Dimension::kNetwork, Dimension::kSyscalls,
                     Dimension::kCapabilities};
    BwrapMechanism mech{BwrapOptions{}};
    std::vector<Mechanism*> mechs{&mech};
    auto grant = acquire_grant(spec, mechs, {});
    if (!grant.ok()) ::_exit(21);
    auto job = mech.spawn(*grant, nullptr, JobIo{-1, out[1], -1});
    if (!job.ok()) ::_exit(22);
    auto exit = (*job)->wait();
    ::_exit(exit.ok() && exit->status.success() ? 0 : 23);
  }
  ::close(out[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  char buf[4096];
  ssize_t n = ::read(out[0], buf, sizeof buf);
  ::close(out[0]);
  ASSERT_GT(n, 0);
  auto kv = testing::parse_kv(std::string(buf, static_cast<size_t>(n)));
  EXPECT_NE(kv["write:/src"], "ok");
  EXPECT_NE(kv["write:/src/hostile"], "ok");
  EXPECT_NE(kv["write:/"], "ok");
  EXPECT_EQ(kv["write:/out"], "ok");
}

// User namespaces switched off (seen through the probe's /proc/sys seam): unavailable, and the
// reason names the switch and how to turn it on.
TEST(BwrapProbe, UserNamespacesDisabledIsAPreciseReason) {
  testing::TempDir sys;
  std::filesystem::create_directories(sys / "user");
  std::filesystem::create_directories(sys / "kernel");
  testing::write_text(sys / "user/max_user_namespaces", "0\n");
  BwrapOptions options;
  options.proc_sys = sys.str();
  auto p = BwrapMechanism(options).probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.unavailable_reason.find("max_user_namespaces = 0"), std::string::npos)
      << p.unavailable_reason;
  EXPECT_TRUE(p.enforceable().empty());

  testing::write_text(sys / "user/max_user_namespaces", "15000\n");
  testing::write_text(sys / "kernel/unprivileged_userns_clone", "0\n");
  p = BwrapMechanism(options).probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.unavailable_reason.find("unprivileged_userns_clone = 0"), std::string::npos)
      << p.unavailable_reason;
}

TEST(BwrapProbe, MissingJobUserIsAPreciseReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "the job user is only used when the controller is root";
  BwrapOptions options;
  options.job_user = "sealrun-no-such-user";
  auto p = BwrapMechanism(options).probe();
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.unavailable_reason.find("sealrun-no-such-user"), std::string::npos);
}

TEST(BwrapProbe, ReportsEveryDimensionFromARealSandbox) {
  BwrapMechanism m(BwrapOptions{});
  auto p = m.probe();
  ASSERT_TRUE(p.available) << p.unavailable_reason;
  EXPECT_NE(p.version.find("bubblewrap"), std::string::npos);
  EXPECT_EQ(p.dimensions.size(), 8u);
  DimensionSet expected = {Dimension::kFilesystem, Dimension::kProcessTree,
                           Dimension::kWallClock,  Dimension::kNetwork,
                           Dimension::kSyscalls,   Dimension::kCapabilities};
  EXPECT_EQ(p.enforceable(), expected);
  for (const auto& d : p.dimensions) EXPECT_FALSE(d.why.empty());
}

}  // namespace
}  // namespace sealrun
