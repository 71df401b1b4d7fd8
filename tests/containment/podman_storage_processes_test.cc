// SPDX-License-Identifier: Apache-2.0
// stop_storage_processes() (containment/podman_storage.h), which the cleanup and `sealrun sweep`
// use to end everything that runs from a podman storage: a process of the storage that starts
// others while it is being ended — as a podman a killed controller left may start its pause
// process after the sweep listed /proc — leaves none of them running. Real processes of the job
// user, as root (CI is root).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "containment/podman_argv.h"
#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "core/process.h"
#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The processes (not zombies) of `uid` whose environment holds `env_entry`.
int processes_with(uid_t uid, const std::string& env_entry) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0 || st.st_uid != uid) continue;
    if (read_all(e.path() / "stat").find(") Z ") != std::string::npos) continue;
    std::string environ = read_all(e.path() / "environ");
    if (('\0' + environ).find('\0' + env_entry + '\0') != std::string::npos) ++n;
  }
  return n;
}

TEST(StorageProcesses, OnesStartedWhileTheStorageIsBeingStoppedAreStoppedToo) {
  if (::geteuid() != 0) GTEST_SKIP() << "runs processes as the job user: root (CI is root)";
  testing::TempDir dir;
  const auto layout = podman::storage_layout(dir / "owned");
  auto user = podman::resolve_job_user(testing::test_job_user_name());
  ASSERT_TRUE(user.ok()) << user.error().message();
  const std::string entry = "XDG_RUNTIME_DIR=" + layout.runtime_dir;
  // A process of the storage that keeps starting more of its kind.
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "i=0; while [ $i -lt 400 ]; do sleep 1000 & i=$((i+1)); done; wait"};
  o.env = std::vector<std::string>{entry, "PATH=/usr/bin:/bin"};
  o.uid = user->uid;
  o.gid = user->gid;
  auto starter = spawn(o);
  ASSERT_TRUE(starter.ok()) << starter.error().message();
  for (int i = 0; i < 500 && processes_with(user->uid, entry) < 30; ++i) ::usleep(2000);
  ASSERT_GE(processes_with(user->uid, entry), 30) << "the starter did not start its processes";

  std::vector<std::string> actions;
  podman::stop_storage_processes(layout, *user, "", actions);
  (void)starter->wait_for(5000);  // killed above: reaped here
  std::string said;
  for (const auto& a : actions) said += a + "\n";
  EXPECT_EQ(processes_with(user->uid, entry), 0) << said;
  EXPECT_NE(said.find("killed podman process"), std::string::npos) << said;
}

}  // namespace
}  // namespace sealrun
