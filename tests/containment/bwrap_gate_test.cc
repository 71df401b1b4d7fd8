// SPDX-License-Identifier: Apache-2.0
// The bwrap start gate (JobIo::on_sandbox_ready, bwrap --block-fd), against the real rootless
// bubblewrap: the hook runs once the sandbox's mounts are in place and before any process of the
// command exists; a failing hook means the command never runs, and the gate is not closed (which
// would start the command) until the sandbox is dead.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "containment/grant.h"
#include "core/unique_fd.h"
#include "tests/containment/bwrap_job.h"

namespace sealrun {
namespace {

using testing::BwrapFixture;
namespace fs = std::filesystem;

// The children of `pid` as the kernel lists them (/proc/PID/task/PID/children).
std::string children_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::string text;
  std::getline(in, text);
  return text;
}

TEST(BwrapStartGate, TheHookSeesTheSetUpSandboxBeforeTheCommandStarts) {
  BwrapFixture fx;
  bool called = false;
  std::string children_at_hook = "not read";
  bool helper_visible = false, out_visible = false;
  JobIo io;
  io.on_sandbox_ready = [&](pid_t pid) -> Status {
    called = true;
    children_at_hook = children_of(pid);
    std::string root = "/proc/" + std::to_string(pid) + "/root";
    helper_visible = fs::exists(root + "/src/hostile");
    out_visible = fs::is_directory(root + "/out");
    return ok_status();
  };
  auto r = fx.run(fx.spec({"status"}), nullptr, io);
  EXPECT_TRUE(r.exit.status.success()) << r.exit.status.describe() << r.err;
  ASSERT_TRUE(called);
  EXPECT_TRUE(helper_visible) << "the admitted mounts are in place when the hook runs";
  EXPECT_TRUE(out_visible);
  EXPECT_EQ(children_at_hook, "") << "a process of the command existed before the gate opened";
  EXPECT_FALSE(r.out.empty()) << "the command ran after the gate";
}

// One refusal at the gate: the hook fails (after `in_hook`, if any), and the command must never
// have run.
void refuse_at_the_gate(BwrapFixture& fx, const std::string& out_path,
                        const std::function<void(pid_t)>& in_hook = {}) {
  ContainmentSpec spec = fx.spec({"status"});
  auto grant = acquire_grant(spec, {&fx.mechanism()}, GroupCapabilities{});
  ASSERT_TRUE(grant.ok()) << grant.error().message();
  int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(out, 0);
  pid_t seen = -1;
  JobIo io{-1, out, -1, [&](pid_t pid) -> Status {
             seen = pid;
             if (in_hook) in_hook(pid);
             return Error::make("the hook refuses");
           }};
  auto job = fx.mechanism().spawn(*grant, nullptr, io);
  ::close(out);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.error().message().find("the hook refuses"), std::string::npos)
      << job.error().message();
  EXPECT_EQ(testing::read_text(out_path), "") << "the command printed: it ran";
  ASSERT_GT(seen, 0);
  // Gone, or a zombie waiting for its reaper: either way nothing of it runs.
  std::ifstream stat("/proc/" + std::to_string(seen) + "/stat");
  std::string pid, comm, state;
  if (stat >> pid >> comm >> state) {
    EXPECT_EQ(state, "Z") << "the sandbox outlived the refusal";
  }
}

TEST(BwrapStartGate, AFailingHookMeansTheCommandNeverRuns) {
  BwrapFixture fx;
  refuse_at_the_gate(fx, fx.dir() / "gate-stdout");
}

// The sandbox's side of the gate at the moment it opens by end-of-file. bwrap starts the command
// when its read of the gate returns, whether with the byte or with end-of-file, so after a refusal
// the gate's write end may only be closed once the sandbox is dead. The hook takes a copy of the
// sandbox's read end (pidfd_getfd) and a thread waits on it: when the write end goes, the thread
// looks at once whether the sandbox's PID 1 has exited. Closing first and killing after (as the
// code once did) is seen here whenever the thread wakes before the sandbox is gone, which the
// kill's own latency makes the usual case; under load that order let the command run and print.
TEST(BwrapStartGate, AfterARefusalTheGateClosesOnlyOnceTheSandboxIsDead) {
  BwrapFixture fx;
  UniqueFd sandbox, gate_copy;
  std::thread watcher;
  std::atomic<int> dead_at_close{-1};  // -1: never woken; 0: alive; 1: dead
  refuse_at_the_gate(fx, fx.dir() / "gate-stdout-watched", [&](pid_t pid) {
    sandbox.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    ASSERT_TRUE(sandbox) << "pidfd_open: " << std::strerror(errno);
    // The descriptor the sandbox is blocked reading: /proc/PID/syscall's first argument.
    std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
    long nr = -1;
    std::string arg;
    ASSERT_TRUE(in >> nr >> arg);
    ASSERT_EQ(nr, SYS_read) << "the sandbox is not held at its gate";
    const int gate_fd = static_cast<int>(std::strtol(arg.c_str(), nullptr, 16));
    gate_copy.reset(static_cast<int>(::syscall(SYS_pidfd_getfd, sandbox.get(), gate_fd, 0)));
    ASSERT_TRUE(gate_copy) << "pidfd_getfd: " << std::strerror(errno);
    watcher = std::thread([&] {
      struct pollfd gate {
        gate_copy.get(), POLLIN, 0
      };
      if (::poll(&gate, 1, 10'000) != 1) return;
      struct pollfd exited {
        sandbox.get(), POLLIN, 0
      };
      dead_at_close = ::poll(&exited, 1, 0) == 1 ? 1 : 0;
    });
  });
  if (watcher.joinable()) watcher.join();
  EXPECT_EQ(dead_at_close.load(), 1)
      << (dead_at_close.load() == 0 ? "the gate opened while the sandbox was alive"
                                    : "the gate was never closed");
}

}  // namespace
}  // namespace sealrun
