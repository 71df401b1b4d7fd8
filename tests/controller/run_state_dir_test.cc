// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 28: a state directory (or results/, owned/, grants/, ...) that the job user can write
// is refused before anything is written, and every path below an accepted one is opened without
// following links — root never writes where the job user points. The real `sealrun` binary, real
// bwrap, the real job user.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/job_user.h"
#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

class StateDirTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "the job user is another user only for root (CI is root)";
    auto user = lookup_job_user(test_job_user_name());
    ASSERT_TRUE(user.ok()) << user.error().message();
    user_ = *user;
    target_ = dir_ / "target";  // where a hostile job user would point root
    fs::create_directories(target_);
  }
  std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().string());
    return out;
  }
  // The run was refused as a usage error naming `what`, and nothing reached `target_`.
  void expect_refused(const Captured& c, const std::string& what, const std::string& says) {
    EXPECT_EQ(c.status.code, 2) << c.out << c.err;
    EXPECT_NE(c.err.find(what), std::string::npos) << c.err;
    EXPECT_NE(c.err.find(says), std::string::npos) << c.err;
    EXPECT_EQ(c.out.find("receipt.json"), std::string::npos) << c.out;
    EXPECT_TRUE(entries(target_).empty()) << "root wrote where the job user pointed";
  }
  JobUser user_;
  std::string target_;
};

TEST_F(StateDirTest, AStateDirectoryOfTheJobUserIsRefusedAndNothingIsWritten) {
  auto a = freeze("echo built > /out/x");
  fs::create_directories(state_);
  ASSERT_EQ(::chown(state_.c_str(), user_.uid, user_.gid), 0);
  auto c = run(a, "jobuser");
  expect_refused(c, state_, "belongs to uid " + std::to_string(user_.uid));
  EXPECT_NE(c.err.find("chown root"), std::string::npos) << c.err;  // what to do
  EXPECT_TRUE(entries(state_).empty()) << "something was written into the refused directory";
  // sweep refuses it too: its records could be the job user's.
  auto s = sealrun({"sweep", "--state-dir", state_});
  EXPECT_EQ(s.status.code, 2) << s.out << s.err;
  EXPECT_NE(s.err.find(state_), std::string::npos) << s.err;
}

TEST_F(StateDirTest, AWritableStateDirectoryOrAncestorIsRefused) {
  auto a = freeze("echo built > /out/x");
  fs::create_directories(state_);
  fs::permissions(state_, fs::perms::all);  // 0777
  expect_refused(run(a, "worldwritable"), state_, "has mode 0777");
  fs::permissions(state_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  // The ancestor: group-writable, and a job user in that group could rename `state`.
  fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_all);
  expect_refused(run(a, "ancestor"), dir_.str(), "has mode 0770");
  fs::permissions(dir_.path(), fs::perms::owner_all);
  EXPECT_EQ(run(a, "fine").status.code, 0);
}

TEST_F(StateDirTest, ALinkOrAJobUsersDirectoryForAFixedSubdirectoryIsRefused) {
  auto a = freeze("echo built > /out/x");
  fs::create_directories(state_);
  for (const char* sub : {"grants", "results", "owned", "exports", "refusals", "tmp"}) {
    SCOPED_TRACE(sub);
    std::string p = state_ + "/" + sub;
    fs::create_directory_symlink(target_, p);
    expect_refused(run(a, std::string("link-") + sub), p, "is a symlink");
    fs::remove(p);
    fs::create_directory(p);
    ASSERT_EQ(::chown(p.c_str(), user_.uid, user_.gid), 0);
    expect_refused(run(a, std::string("owner-") + sub), p, "belongs to uid");
    fs::remove(p);
  }
  // A link to the state directory itself, owned by the job user: not followed.
  fs::create_directory_symlink(state_, dir_ / "state-link");
  ASSERT_EQ(::lchown((dir_ / "state-link").c_str(), user_.uid, user_.gid), 0);
  auto c = sealrun(
      {"run", a.path, "--sha256", a.sha256, "--id", "vialink", "--state-dir", dir_ / "state-link"});
  EXPECT_EQ(c.status.code, 2) << c.err;
  EXPECT_NE(c.err.find("is a symlink that belongs to"), std::string::npos) << c.err;
}

// The race the check alone cannot close: results/ is swapped for a link while the job runs (by
// root here — after the check nobody else can). The logs and the receipt are written below the
// state directory's held descriptor without following links: they fail, and nothing lands where
// the link points.
TEST_F(StateDirTest, ResultsSwappedForALinkDuringTheRunCatchesNoWrite) {
  auto a = freeze(
      "touch /out/started; i=0; while [ ! -e /out/go ] && [ $i -lt 600 ]; do sleep 0.05; "
      "i=$((i+1)); done; echo built > /out/x");
  SpawnOptions o =
      sealrun_options({"run", a.path, "--sha256", a.sha256, "--id", "swap", "--state-dir", state_});
  auto out = open_at(AT_FDCWD, dir_ / "controller.out", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  auto err = open_at(AT_FDCWD, dir_ / "controller.err", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_TRUE(out.ok() && err.ok());
  o.stdout_fd = out->get();
  o.stderr_fd = err->get();
  auto controller = spawn(o);
  ASSERT_TRUE(controller.ok()) << controller.error().message();
  // The job's /out while it runs (its result space, or results/swap/out), found before the swap.
  int64_t deadline = monotonic_ms() + 60000;
  while (!fs::exists(live_out_dir(state_, "swap") + "/started") && monotonic_ms() < deadline)
    ::usleep(20 * 1000);
  const std::string live = live_out_dir(state_, "swap");
  ASSERT_TRUE(fs::exists(live + "/started"));
  fs::rename(state_ + "/results", state_ + "/results.real");
  fs::create_directory_symlink(target_, state_ + "/results");
  // What a write that followed the link would need to succeed: the run's directory in the target.
  fs::create_directory(target_ + "/swap");
  write_text(
      live.starts_with(state_ + "/results/") ? state_ + "/results.real/swap/out/go" : live + "/go",
      "");
  auto st = controller->wait_for(120000);
  ASSERT_TRUE(st.ok() && st->has_value()) << "the controller did not finish";
  std::string said = read_text(dir_ / "controller.err");
  EXPECT_EQ((*st)->code, 7) << read_text(dir_ / "controller.out") << said;
  EXPECT_NE(said.find("receipt could not be written"), std::string::npos) << said;
  EXPECT_NE(said.find("symlink"), std::string::npos) << said;
  EXPECT_EQ(entries(target_), std::vector<std::string>{target_ + "/swap"})
      << "root wrote where the link pointed";
  EXPECT_FALSE(fs::exists(state_ + "/results.real/swap/receipt.json"));
  EXPECT_TRUE(no_process_with(dir_.str()));
  fs::remove(state_ + "/results");
  fs::rename(state_ + "/results.real", state_ + "/results");
}

}  // namespace
}  // namespace sealrun::testing
