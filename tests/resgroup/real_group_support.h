// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests that run real jobs in real resource groups (cgroup v1 on this host,
// cgroup v2 inside the pure-v2 VM): make a group and check its read-back, spawn a job into it
// through join_fds(), stop and remove it and check that nothing is left.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "containment/resgroup/resource_group.h"
#include "core/process.h"

namespace sealrun::resgroup::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string unique_id(const char* what) { return fmt::format("it-{}-{}", what, ::getpid()); }

// Creates the group on `backend` and expects every limit read back as applied, except those named
// in `not_applied` (memory.high on cgroup v1).
inline std::unique_ptr<ResourceGroup> make_group(const std::string& id, const GroupLimits& limits,
                                                 Backend backend,
                                                 const std::vector<std::string>& not_applied = {}) {
  auto g = create_group(id, limits, backend);
  EXPECT_TRUE(g.ok()) << g.error().message();
  if (!g.ok()) return nullptr;
  auto rb = (*g)->read_back();
  EXPECT_TRUE(rb.ok()) << rb.error().message();
  if (!rb.ok()) return std::move(*g);
  for (const auto& l : *rb) {
    bool exempt = std::find(not_applied.begin(), not_applied.end(), l.name) != not_applied.end();
    if (!exempt) {
      EXPECT_TRUE(l.applied) << l.name << ": " << l.note;
    }
  }
  return std::move(*g);
}

inline void stop_and_remove(ResourceGroup& g) {
  auto locs = g.locators();
  auto s = g.stop(200);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->confirmed);
  ASSERT_TRUE(g.remove().ok());
  for (const auto& l : locs) EXPECT_FALSE(std::filesystem::exists(l)) << l << " still exists";
}

inline Result<Child> spawn_in(const ResourceGroup& g, std::vector<std::string> argv,
                              int stdout_fd = -1) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.join_cgroup_fds = g.join_fds();
  o.stdout_fd = stdout_fd;
  return spawn(o);
}

}  // namespace sealrun::resgroup::testing
