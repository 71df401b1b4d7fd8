// SPDX-License-Identifier: Apache-2.0
// `sealrun runner` through its helper (remote/cmd_runner.cc): `sealrun` parses the runner's
// command line itself (--help names every option, a usage error is exit 2) and then execs
// sealrun-runner, found beside it (a build tree) or in ../libexec/sealrun/ (the install layout);
// without the helper the command fails with exit 1 naming both paths it looked at. The serving
// case proves the exec is real: the process that listens is the one `sealrun runner` started
// (same pid), its executable is the helper, and SIGTERM stops it with exit 0.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

const std::string kBuild = SEALRUN_BINARY_DIR;

Captured run(std::vector<std::string> argv) {
  SpawnOptions options;
  options.argv = std::move(argv);
  auto result = run_capture(options, 120000);
  EXPECT_TRUE(result.ok()) << result.error().message();
  return result.ok() ? std::move(result).value() : Captured{};
}

// Options that pass sealrun's own parsing, with a --listen only the helper rejects.
std::vector<std::string> helper_rejected(const std::string& sealrun, const TempDir& dir) {
  return {sealrun,       "runner",           "--listen",
          "nowhere",     "--build-dir",      dir.path().string(),
          "--toolchain", dir.path().string()};
}

TEST(RunnerExec, HelpIsSealrunsOwnAndNamesEveryOption) {
  auto help = run({kBuild + "/sealrun", "runner", "--help"});
  EXPECT_EQ(help.status.code, 0) << help.err;
  for (const char* opt : {"--listen", "--build-dir", "--state-dir", "--toolchain", "--tree",
                          "--set", "--concurrency", "buildbarn.runner.Runner"})
    EXPECT_THAT(help.out, HasSubstr(opt));
  EXPECT_THAT(help.out,
              ::testing::Not(HasSubstr("--sealrun")));  // the helper's hidden option stays hidden
  auto usage = run({kBuild + "/sealrun", "runner", "--build-dir", "/tmp"});
  EXPECT_EQ(usage.status.code, 2);
  EXPECT_THAT(usage.err, HasSubstr("--listen"));
}

TEST(RunnerExec, TheHelperBesideTheExecutableGetsTheOptions) {
  TempDir dir;
  auto r = run(helper_rejected(kBuild + "/sealrun", dir));
  EXPECT_EQ(r.status.code, 2) << r.err;  // the helper's own check of --listen, its usage code
  EXPECT_THAT(r.err,
              HasSubstr("sealrun runner: --listen nowhere: expected unix:PATH or HOST:PORT"));
}

TEST(RunnerExec, TheInstallLayoutFindsTheHelperInLibexec) {
  TempDir dir;
  fs::create_directories(dir / "usr/bin");
  fs::create_directories(dir / "usr/libexec/sealrun");
  fs::copy_file(kBuild + "/sealrun", dir / "usr/bin/sealrun");
  fs::copy_file(kBuild + "/sealrun-runner", dir / "usr/libexec/sealrun/sealrun-runner");
  auto r = run(helper_rejected(dir / "usr/bin/sealrun", dir));
  EXPECT_EQ(r.status.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("expected unix:PATH or HOST:PORT"));
}

TEST(RunnerExec, AMissingHelperIsExit1NamingWhereItLooked) {
  TempDir dir;
  fs::create_directories(dir / "bin");
  fs::copy_file(kBuild + "/sealrun", dir / "bin/sealrun");
  auto r = run(helper_rejected(dir / "bin/sealrun", dir));
  EXPECT_EQ(r.status.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sealrun-runner is missing"));
  EXPECT_THAT(r.err, HasSubstr(dir / "bin/sealrun-runner"));
  EXPECT_THAT(r.err, HasSubstr(dir / "bin/../libexec/sealrun/sealrun-runner"));
  // --help needs no helper: it is sealrun's.
  auto help = run({dir / "bin/sealrun", "runner", "--help"});
  EXPECT_EQ(help.status.code, 0) << help.err;
}

TEST(RunnerExec, TheHelperAloneNeedsTheSealrunToRun) {
  TempDir dir;
  auto r = run({kBuild + "/sealrun-runner", "--listen", "unix:" + dir / "s", "--build-dir",
                dir.path().string(), "--toolchain", dir.path().string()});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--sealrun"));
}

TEST(RunnerExec, TheServingProcessIsTheHelperUnderTheSamePid) {
  TempDir dir;
  fs::create_directories(dir / "build");
  fs::create_directories(dir / "toolchain");
  const std::string socket = dir / "runner.sock";
  auto log = ::open((dir / "runner.log").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(log, 0);
  SpawnOptions options;
  options.argv = {kBuild + "/sealrun", "runner",      "--listen",      "unix:" + socket,
                  "--build-dir",       dir / "build", "--toolchain",   dir / "toolchain=/opt/tc",
                  "--state-dir",       dir / "state", "--concurrency", "1"};
  options.stderr_fd = log;
  auto child = spawn(options);
  ::close(log);
  ASSERT_TRUE(child.ok()) << child.error().message();
  struct stat st {};
  for (int i = 0; i < 600 && ::stat(socket.c_str(), &st) != 0; ++i) {
    auto ended = child->wait_for(100);  // a runner that could not start ends the wait at once
    ASSERT_TRUE(ended.ok() && !ended->has_value()) << testing::read_text(dir / "runner.log");
  }
  ASSERT_EQ(::stat(socket.c_str(), &st), 0) << testing::read_text(dir / "runner.log");
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(child->pid()) + "/exe"),
            fs::canonical(kBuild + "/sealrun-runner"));
  ASSERT_TRUE(child->signal(SIGTERM).ok());
  auto exit = child->wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->code, 0) << testing::read_text(dir / "runner.log");
  EXPECT_THAT(testing::read_text(dir / "runner.log"), HasSubstr("sealrun runner: stopped"));
}

}  // namespace
}  // namespace sealrun
