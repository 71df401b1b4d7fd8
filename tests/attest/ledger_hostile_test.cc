// SPDX-License-Identifier: Apache-2.0
// The ledger in a hostile state directory (ACCEPTANCE 28): whoever can write the directory may
// plant symlinks, FIFOs or directories where the ledger files belong. Nothing is followed, nothing
// blocks, nothing outside the directory is written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "attest/ledger.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

class HostileState : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fd = open_state_dir(state_.str());
    ASSERT_TRUE(fd);
    dirfd_ = std::move(*fd);
    victim_ = outside_ / "victim";
    write_text(victim_, "precious\n");
  }
  Result<LedgerEntry> append(int lock_timeout_ms = kLedgerLockTimeoutMs) {
    return append_to_ledger(dirfd_.get(),
                            {"run-1", "built", std::string(64, 'a'), "", lock_timeout_ms});
  }
  TempDir state_, outside_;
  UniqueFd dirfd_;
  std::string victim_;
};

TEST_F(HostileState, SymlinkedLedgerIsNotFollowed) {
  ASSERT_EQ(::symlink(victim_.c_str(), (state_ / "ledger.jsonl").c_str()), 0);
  auto e = append();
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("STATE/ledger.jsonl: is a symlink; refused"),
            std::string::npos)
      << e.error().message();
  EXPECT_EQ(read_text(victim_), "precious\n");
  auto v = verify_ledger(dirfd_.get());
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("is a symlink"), std::string::npos);
}

TEST_F(HostileState, SymlinkedLockIsNotFollowed) {
  ASSERT_EQ(::symlink(victim_.c_str(), (state_ / "ledger.lock").c_str()), 0);
  auto e = append();
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("STATE/ledger.lock: is a symlink"), std::string::npos)
      << e.error().message();
  EXPECT_EQ(read_text(victim_), "precious\n");
}

TEST_F(HostileState, FifoOrDirectoryInPlaceOfTheLedger) {
  ASSERT_EQ(::mkfifo((state_ / "ledger.jsonl").c_str(), 0666), 0);
  auto e = append();  // must not hang on the FIFO
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("STATE/ledger.jsonl: is a FIFO, not a regular file"),
            std::string::npos)
      << e.error().message();
  EXPECT_FALSE(verify_ledger(dirfd_.get()));
  ASSERT_EQ(::unlink((state_ / "ledger.jsonl").c_str()), 0);
  ASSERT_EQ(::mkdir((state_ / "ledger.jsonl").c_str(), 0755), 0);
  EXPECT_FALSE(append());
}

TEST_F(HostileState, HugeLedgerIsRefusedFromItsSize) {
  {
    UniqueFd fd(::open((state_ / "ledger.jsonl").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(kMaxLedgerBytes + 1)), 0);
  }
  auto v = verify_ledger(dirfd_.get());
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("over the limit"), std::string::npos) << v.error().message();
  EXPECT_FALSE(append());
}

TEST_F(HostileState, HeldLockTimesOutWithAMessage) {
  UniqueFd lock(::open((state_ / "ledger.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  ASSERT_TRUE(lock);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A separate open file description in the child, so its flock conflicts with ours.
    int fd = ::open((state_ / "ledger.lock").c_str(), O_RDWR | O_CLOEXEC);
    ::flock(fd, LOCK_EX);
    ::pause();
    ::_exit(0);
  }
  // Wait until the child holds the lock (a condition, not a sleep).
  for (;;) {
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) break;
    ::flock(lock.get(), LOCK_UN);
    ::sched_yield();
  }
  auto e = append(300);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("still locked after 300 ms"), std::string::npos)
      << e.error().message();
  EXPECT_TRUE(append());  // the holder is gone: appending works again
}

}  // namespace
}  // namespace sealrun::attest
