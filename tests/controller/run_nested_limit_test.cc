// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 33: nested under a parent group with a lower memory limit (a Slurm job step, a
// systemd slice, a CI runner's group), the receipt reports the limit that binds and the group that
// sets it — here with real cgroup v1 groups: the test makes a parent group with memory.limit 256
// MiB under its own, starts the controller inside it, and the run keeps sealrun's default 8 GiB.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/process.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

std::string own_memory_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    std::string controllers = line.substr(first + 1, second - first - 1);
    if (controllers == "memory") return line.substr(second + 1);
  }
  return "";
}

TEST_F(RunTest, UnderAParentWithALowerLimitTheReceiptNamesTheLimitThatBinds) {
  std::string own = own_memory_cgroup();
  ASSERT_FALSE(own.empty()) << "no cgroup v1 memory hierarchy (docs/testbed.md: this host has one)";
  std::string rel = (own == "/" ? "" : own) + "/nested-parent-" + std::to_string(::getpid());
  std::string parent = "/sys/fs/cgroup/memory" + rel;
  ASSERT_TRUE(fs::create_directory(parent)) << parent;
  write_text(parent + "/memory.limit_in_bytes", "268435456");
  int procs = ::open((parent + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(procs, 0);

  auto a = freeze("echo ok > /out/ok");
  SpawnOptions o = sealrun_options(
      {"run", a.path, "--sha256", a.sha256, "--id", "nested", "--state-dir", state_});
  o.join_cgroup_fds = {procs};
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  auto st = child->wait();
  ::close(procs);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->code, 0);
  auto r = receipt("nested");
  bool seen = false;
  for (const auto& l : r["memory"]["limits"]) {
    if (l["name"] != "memory_max_bytes") continue;
    seen = true;
    EXPECT_EQ(l["requested"], 8ull << 30) << "sealrun's own default is what it wrote";
    EXPECT_EQ(l["effective"], 268435456u) << l.dump();
    EXPECT_EQ(l["effective_set_by"], "memory:" + rel) << l.dump();
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(::rmdir(parent.c_str()), 0) << "the parent group must be empty again";
}

}  // namespace
}  // namespace sealrun::testing
