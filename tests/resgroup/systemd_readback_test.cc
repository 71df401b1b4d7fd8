// SPDX-License-Identifier: Apache-2.0
// Unit tests of the systemd back end's pure half (systemd_readback.h): the scope's name, the
// StartTransientUnit property list as data, the applied/not-applied decision per limit on v1 and
// v2, and the parsing of the cgroup files behind the memory report.
#include "containment/resgroup/systemd_readback.h"

#include <gtest/gtest.h>

#include <map>

namespace sealrun::resgroup::systemd {
namespace {

TEST(SystemdUnitName, BuildsScopeNameFromValidRunIds) {
  EXPECT_EQ(*scope_unit_name("r1"), "sealrun-r1.scope");
  EXPECT_EQ(*scope_unit_name("a.b-c_D9"), "sealrun-a.b-c_D9.scope");
}

TEST(SystemdUnitName, RefusesRunIdsThatCannotNameAUnit) {
  for (const char* bad : {"", ".", "..", "a/b", "a b", "x@y", "semi;colon", "ü", "a\\x2d"}) {
    auto r = scope_unit_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("[A-Za-z0-9_.-]"), std::string::npos);
  }
  EXPECT_FALSE(scope_unit_name(std::string(65, 'a')).ok());
  EXPECT_TRUE(scope_unit_name(std::string(64, 'a')).ok());
}

TEST(SystemdProperties, CarryLimitsPidsAndDelegation) {
  GroupLimits limits{.memory_high_bytes = 48 << 20,
                     .memory_max_bytes = 64 << 20,
                     .swap_max_bytes = 0,
                     .pids_max = 32};
  auto props = scope_properties(limits, {41, 42}, "sealrun run r1");
  std::map<std::string, const UnitProperty*> by_name;
  for (const auto& p : props) {
    EXPECT_TRUE(by_name.emplace(p.name, &p).second) << "duplicate " << p.name;
  }
  auto u64 = [&](const char* n) { return std::get<uint64_t>(by_name.at(n)->value); };
  EXPECT_EQ(u64("MemoryHigh"), 48u << 20);
  EXPECT_EQ(u64("MemoryMax"), 64u << 20);
  EXPECT_EQ(u64("MemorySwapMax"), 0u);
  EXPECT_EQ(u64("TasksMax"), 32u + kKeeperTasks);
  EXPECT_EQ(by_name.at("TasksMax")->signature(), "t");
  EXPECT_TRUE(std::get<bool>(by_name.at("Delegate")->value));
  EXPECT_EQ(by_name.at("Delegate")->signature(), "b");
  EXPECT_EQ(std::get<std::vector<uint32_t>>(by_name.at("PIDs")->value),
            (std::vector<uint32_t>{41, 42}));
  EXPECT_EQ(by_name.at("PIDs")->signature(), "au");
  EXPECT_EQ(std::get<std::string>(by_name.at("CollectMode")->value), "inactive-or-failed");
  EXPECT_EQ(by_name.at("Description")->signature(), "s");
}

TEST(SystemdProperties, UnlimitedTasksStayUnlimitedWithTheKeeper) {
  GroupLimits limits;
  limits.pids_max = UINT64_MAX;
  for (const auto& p : scope_properties(limits, {1}, "d")) {
    if (p.name == "TasksMax") {
      EXPECT_EQ(std::get<uint64_t>(p.value), UINT64_MAX);
    }
  }
  ScopeObservation o;
  o.file_pids_max = UINT64_MAX;  // "max"
  for (const auto& r : evaluate_readback(limits, o, 4096)) {
    if (r.name == "pids_max") {
      EXPECT_TRUE(r.applied) << r.note;
    }
  }
}

const GroupLimits kLimits{.memory_high_bytes = 48 << 20,
                          .memory_max_bytes = 64 << 20,
                          .swap_max_bytes = 0,
                          .pids_max = 32};

std::map<std::string, LimitReadback> by_name(const std::vector<LimitReadback>& v) {
  std::map<std::string, LimitReadback> m;
  for (const auto& r : v) m.emplace(r.name, r);
  return m;
}

TEST(SystemdReadback, V1NeverClaimsMemoryHighOrSwap) {
  ScopeObservation o;
  o.mode = CgroupMode::kLegacy;
  o.property_memory_high = 48 << 20;
  o.property_memory_max = 64 << 20;
  o.property_swap_max = 0;
  o.file_memory_max = 64 << 20;
  o.file_swap_max = UINT64_MAX;
  o.file_pids_max = 33;
  auto r = by_name(evaluate_readback(kLimits, o, 4096));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r.at("memory_max_bytes").applied);
  EXPECT_EQ(r.at("memory_max_bytes").observed, 64u << 20);
  EXPECT_FALSE(r.at("memory_high_bytes").applied);
  EXPECT_NE(r.at("memory_high_bytes").note.find("not enforced"), std::string::npos);
  EXPECT_FALSE(r.at("swap_max_bytes").applied);
  EXPECT_NE(r.at("swap_max_bytes").note.find("not limited"), std::string::npos);
  EXPECT_TRUE(r.at("pids_max").applied);
  EXPECT_EQ(r.at("pids_max").requested, 32u);
  EXPECT_EQ(r.at("pids_max").observed, 33u);
}

TEST(SystemdReadback, AManagerPropertyAloneIsNotApplied) {
  ScopeObservation o;
  o.mode = CgroupMode::kLegacy;
  o.property_memory_max = 64 << 20;  // the manager says so, but the kernel file is unreadable
  o.property_tasks_max = 33;
  auto r = by_name(evaluate_readback(kLimits, o, 4096));
  EXPECT_FALSE(r.at("memory_max_bytes").applied);
  EXPECT_EQ(r.at("memory_max_bytes").observed, 64u << 20);
  EXPECT_NE(r.at("memory_max_bytes").note.find("could not be read"), std::string::npos);
  EXPECT_FALSE(r.at("pids_max").applied);
}

TEST(SystemdReadback, AWrongKernelValueIsNotApplied) {
  ScopeObservation o;
  o.mode = CgroupMode::kLegacy;
  o.file_memory_max = UINT64_MAX;
  o.file_pids_max = 32;  // missing the keeper's task
  auto r = by_name(evaluate_readback(kLimits, o, 4096));
  EXPECT_FALSE(r.at("memory_max_bytes").applied);
  EXPECT_NE(r.at("memory_max_bytes").note.find("infinity"), std::string::npos);
  EXPECT_FALSE(r.at("pids_max").applied);
}

TEST(SystemdReadback, V2AppliesWhatTheFilesHoldRoundedToPages) {
  GroupLimits odd = kLimits;
  odd.memory_max_bytes = (64 << 20) + 100;  // the kernel stores whole pages
  ScopeObservation o;
  o.mode = CgroupMode::kUnified;
  o.file_memory_high = 48 << 20;
  o.file_memory_max = 64 << 20;
  o.file_swap_max = 0;
  o.file_pids_max = 33;
  auto r = by_name(evaluate_readback(odd, o, 4096));
  EXPECT_TRUE(r.at("memory_high_bytes").applied);
  EXPECT_TRUE(r.at("memory_max_bytes").applied);
  EXPECT_TRUE(r.at("swap_max_bytes").applied);
  EXPECT_TRUE(r.at("pids_max").applied);
  o.file_memory_high = UINT64_MAX;
  EXPECT_FALSE(by_name(evaluate_readback(odd, o, 4096)).at("memory_high_bytes").applied);
}

TEST(SystemdCgroupFiles, ParseLimitsIncludingUnlimited) {
  EXPECT_EQ(parse_limit("67108864\n"), 67108864u);
  EXPECT_EQ(parse_limit("max\n"), UINT64_MAX);
  EXPECT_EQ(parse_limit("9223372036854771712\n"), UINT64_MAX);  // v1 "no limit"
  EXPECT_EQ(parse_limit("12abc"), std::nullopt);
  EXPECT_EQ(parse_limit(""), std::nullopt);
}

TEST(SystemdCgroupFiles, V1MemoryReport) {
  V1MemoryFiles f{"67108864\n", "5312\n", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"};
  MemoryReport r = memory_report_v1(f);
  EXPECT_EQ(r.peak_bytes, 67108864u);
  EXPECT_EQ(r.events_max, 5312u);
  EXPECT_EQ(r.events_oom_kill, 1u);
  EXPECT_EQ(r.events_oom, 1u);
  MemoryReport none = memory_report_v1({});
  EXPECT_EQ(none.peak_bytes, std::nullopt);
  EXPECT_EQ(none.events_oom_kill, 0u);
}

TEST(SystemdCgroupFiles, V2MemoryReport) {
  V2MemoryFiles f{"1048576\n", "low 0\nhigh 7\nmax 3\noom 2\noom_kill 1\noom_group_kill 0\n",
                  "4096\n"};
  MemoryReport r = memory_report_v2(f);
  EXPECT_EQ(r.peak_bytes, 1048576u);
  EXPECT_EQ(r.events_high, 7u);
  EXPECT_EQ(r.events_max, 3u);
  EXPECT_EQ(r.events_oom, 2u);
  EXPECT_EQ(r.events_oom_kill, 1u);
  EXPECT_EQ(r.swap_used_bytes, 4096u);
  // "oom" must not match "oom_kill" or "oom_group_kill" lines.
  EXPECT_EQ(flat_keyed_value("oom_kill 4\noom 9\n", "oom"), 9u);
  EXPECT_EQ(flat_keyed_value("oom_kill 4\n", "oom"), std::nullopt);
}

}  // namespace
}  // namespace sealrun::resgroup::systemd
