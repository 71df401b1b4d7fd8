// SPDX-License-Identifier: Apache-2.0
// The ids every process holds (containment/process_ids.h), both ways of reading them: a real child
// that holds an id only as its saved uid or gid is seen, a zombie and a reaped child are not.
// Needs root (setresuid to ids nobody else uses), as the whole suite does.
#include "containment/process_ids.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

namespace sealrun {
namespace {

// Ids no other process on a test host holds.
constexpr uid_t kUid = 3999001;
constexpr gid_t kGid = 3999002;

// A child that keeps root as its real and effective ids and holds kUid/kGid only as saved ids,
// then waits for its stdin pipe to close (or, with `exit_at_once`, exits and stays a zombie).
pid_t start_child(int* hold_fd, bool exit_at_once) {
  int ready[2], hold[2];
  if (::pipe(ready) != 0 || ::pipe(hold) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(hold[1]);
    if (::setresgid(static_cast<gid_t>(-1), static_cast<gid_t>(-1), kGid) != 0 ||
        ::setresuid(static_cast<uid_t>(-1), static_cast<uid_t>(-1), kUid) != 0)
      ::_exit(1);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    if (!exit_at_once) (void)::read(hold[0], &c, 1);
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(hold[0]);
  char c = 0;
  bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  *hold_fd = hold[1];
  return ok ? pid : -1;
}

const IdsVia kWays[] = {IdsVia::kBest, IdsVia::kProcStatus};

TEST(IdsInUse, SeesAnIdHeldOnlyAsTheSavedOne) {
  ASSERT_EQ(::geteuid(), 0u) << "needs root";
  int hold = -1;
  pid_t pid = start_child(&hold, false);
  ASSERT_GT(pid, 0);
  for (IdsVia via : kWays) {
    IdsInUse in_use = ids_in_use(via);
    EXPECT_EQ(in_use.uids.count(kUid), 1u) << static_cast<int>(via);
    EXPECT_EQ(in_use.gids.count(kGid), 1u) << static_cast<int>(via);
    EXPECT_EQ(in_use.uids.count(0), 1u) << static_cast<int>(via);  // this process
  }
  ::close(hold);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (IdsVia via : kWays) {
    IdsInUse in_use = ids_in_use(via);
    EXPECT_EQ(in_use.uids.count(kUid), 0u) << "reaped, " << static_cast<int>(via);
    EXPECT_EQ(in_use.gids.count(kGid), 0u) << "reaped, " << static_cast<int>(via);
  }
}

TEST(IdsInUse, LeavesOutAZombie) {
  ASSERT_EQ(::geteuid(), 0u) << "needs root";
  int hold = -1;
  pid_t pid = start_child(&hold, true);
  ASSERT_GT(pid, 0);
  siginfo_t info{};
  // Waits for the exit without reaping: the child stays a zombie.
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  for (IdsVia via : kWays) {
    IdsInUse in_use = ids_in_use(via);
    EXPECT_EQ(in_use.uids.count(kUid), 0u) << "zombie, " << static_cast<int>(via);
    EXPECT_EQ(in_use.gids.count(kGid), 0u) << "zombie, " << static_cast<int>(via);
  }
  ::close(hold);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
}

}  // namespace
}  // namespace sealrun
