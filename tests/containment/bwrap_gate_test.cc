// The bwrap start gate (JobIo::on_sandbox_ready, bwrap --block-fd), against the real rootless
// bubblewrap: the hook runs once the sandbox's mounts are in place and before any process of the
// command exists; a failing hook means the command never runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "containment/grant.h"
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

TEST(BwrapStartGate, AFailingHookMeansTheCommandNeverRuns) {
  BwrapFixture fx;
  ContainmentSpec spec = fx.spec({"status"});
  auto grant = acquire_grant(spec, {&fx.mechanism()}, GroupCapabilities{});
  ASSERT_TRUE(grant.ok()) << grant.error().message();
  std::string out_path = fx.dir() / "gate-stdout";
  int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(out, 0);
  pid_t seen = -1;
  JobIo io{-1, out, -1, [&](pid_t pid) -> Status {
             seen = pid;
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

}  // namespace
}  // namespace sealrun
