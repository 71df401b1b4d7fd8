// SPDX-License-Identifier: Apache-2.0
// limits_hit() (controller/run/limits_hit.h): which figures name which limit, in the fixed order.
#include "controller/run/limits_hit.h"

#include <gtest/gtest.h>

namespace sealrun::run {
namespace {

struct Case {
  const char* name;
  LimitsSeen seen;
  std::vector<std::string> hit;
};

const Case kCases[] = {
    {"nothing", {}, {}},
    {"pids", {.pids_refused = 3}, {"pids"}},
    {"memory_failcnt", {.memory_max_events = 1}, {"memory"}},
    {"oom_kill_alone", {.oom_kills = 1}, {"memory"}},
    {"growth", {.growth_guard = true}, {"growth"}},
    {"spaces",
     {.owned_space_full = true, .result_space_full = true},
     {"owned_space", "result_space"}},
    {"all",
     {3, 1, 1, true, true, true, true},
     {"pids", "memory", "growth", "owned_space", "result_space", "wall_clock"}},
};

class LimitsHit : public ::testing::TestWithParam<Case> {};

TEST_P(LimitsHit, NamesWhatWasReached) { EXPECT_EQ(limits_hit(GetParam().seen), GetParam().hit); }

INSTANTIATE_TEST_SUITE_P(Table, LimitsHit, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sealrun::run
