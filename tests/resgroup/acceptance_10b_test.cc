// SPDX-License-Identifier: Apache-2.0
// ACCEPTANCE 10b, the mission's own numbers, for real on this host's cgroup v1: with the default
// limits (memory.max 8 GiB, memory.high 7 GiB, no swap) a job that allocates and touches 9 GiB is
// OOM-killed, the group's events say so, and no swap was used. Takes about a minute (labels
// integration and slow).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "containment/resgroup/resource_group.h"
#include "core/process.h"

namespace sealrun::resgroup {
namespace {

TEST(Acceptance10b, NineGibUnderTheDefaultEightGibLimitIsOomKilled) {
  GroupLimits defaults;  // the admitted defaults
  ASSERT_EQ(defaults.memory_max_bytes, 8ULL << 30);
  ASSERT_EQ(defaults.memory_high_bytes, 7ULL << 30);
  ASSERT_EQ(defaults.swap_max_bytes, 0u);
  auto g =
      create_group("acceptance-10b-" + std::to_string(::getpid()), defaults, Backend::kCgroupV1);
  ASSERT_TRUE(g.ok()) << g.error().message();
  auto rb = (*g)->read_back();
  ASSERT_TRUE(rb.ok()) << rb.error().message();
  for (const auto& l : *rb) {
    if (l.name == "memory_max_bytes" || l.name == "swap_max_bytes") {
      EXPECT_TRUE(l.applied) << l.name << ": " << l.note;
    }
  }
  SpawnOptions o;
  o.argv = {ALLOC_HELPER, "9216"};
  o.join_cgroup_fds = (*g)->join_fds();
  auto child = spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().message();
  auto st = child->wait();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->signal, SIGKILL) << "9 GiB under an 8 GiB limit: " << st->describe();
  auto r = (*g)->memory_report();
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_GE(r->events_oom_kill, 1u);
  ASSERT_TRUE(r->swap_used_bytes.has_value());
  EXPECT_EQ(*r->swap_used_bytes, 0u);
  ASSERT_TRUE(r->peak_bytes.has_value());
  EXPECT_LE(*r->peak_bytes, 8ULL << 30);
  EXPECT_GT(*r->peak_bytes, 7ULL << 30);
  std::cout << "peak " << *r->peak_bytes << " bytes, oom_kill " << r->events_oom_kill << "\n";
  auto locs = (*g)->locators();
  auto s = (*g)->stop(200);
  ASSERT_TRUE(s.ok() && s->confirmed);
  ASSERT_TRUE((*g)->remove().ok());
  for (const auto& l : locs) EXPECT_FALSE(std::filesystem::exists(l)) << l;
}

}  // namespace
}  // namespace sealrun::resgroup
