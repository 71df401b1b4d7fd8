// SPDX-License-Identifier: Apache-2.0
// A directory tree shaped like cgroupfs, for the back ends' unit tests: the test plays the kernel
// by creating the interface files that mkdir(2) on a real cgroupfs makes appear, and by writing
// what the kernel would report (populated 0, oom_kill 1, ...).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "containment/resgroup/cgroupfs_io.h"
#include "tests/support/temp_dir.h"

namespace sealrun::resgroup::testing {

using sealrun::testing::read_text;
using sealrun::testing::write_text;

inline void make_files(const std::string& dir,
                       const std::vector<std::pair<std::string, std::string>>& files) {
  std::filesystem::create_directories(dir);
  for (const auto& [name, content] : files) write_text(dir + "/" + name, content);
}

// The files a fresh v1 group has in each hierarchy. `memsw` false plays swapaccount=0.
inline void v1_group_files(const std::string& dir, bool memsw) {
  std::string unlimited = "9223372036854771712\n";
  if (dir.find("/memory/") != std::string::npos) {
    make_files(dir, {{"cgroup.procs", ""},
                     {"tasks", ""},
                     {"memory.limit_in_bytes", unlimited},
                     {"memory.soft_limit_in_bytes", unlimited},
                     {"memory.max_usage_in_bytes", "0\n"},
                     {"memory.failcnt", "0\n"},
                     {"memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"}});
    if (memsw)
      make_files(dir, {{"memory.memsw.limit_in_bytes", unlimited},
                       {"memory.memsw.failcnt", "0\n"},
                       {"memory.memsw.max_usage_in_bytes", "0\n"}});
  } else if (dir.find("/pids/") != std::string::npos) {
    make_files(
        dir, {{"cgroup.procs", ""}, {"tasks", ""}, {"pids.max", "max\n"}, {"pids.current", "0\n"}});
  } else if (dir.find("/freezer/") != std::string::npos) {
    make_files(dir, {{"cgroup.procs", ""}, {"tasks", ""}, {"freezer.state", "THAWED\n"}});
  }
}

// The files of a fresh v2 group.
inline void v2_group_files(const std::string& dir, bool swap) {
  make_files(dir, {{"cgroup.procs", ""},
                   {"cgroup.controllers", "memory pids\n"},
                   {"cgroup.subtree_control", ""},
                   {"cgroup.events", "populated 0\nfrozen 0\n"},
                   {"cgroup.kill", ""},
                   {"memory.high", "max\n"},
                   {"memory.max", "max\n"},
                   {"memory.peak", "0\n"},
                   {"memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"},
                   {"pids.max", "max\n"}});
  if (swap) make_files(dir, {{"memory.swap.max", "max\n"}, {"memory.swap.current", "0\n"}});
}

// Removes the interface files so that rmdir(2) succeeds, as it does on cgroupfs.
inline void drop_interface_files(const std::string& dir) {
  if (!std::filesystem::exists(dir)) return;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) std::filesystem::remove(e.path());
}

}  // namespace sealrun::resgroup::testing
