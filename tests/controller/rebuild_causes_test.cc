// SPDX-License-Identifier: Apache-2.0
// --explain's search for the variations that cause a difference (rebuild_causes.h), on a fake
// rebuild whose outputs differ under a chosen rule: the causes found, sorted, and what it costs.
#include "controller/rebuild/rebuild_causes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace sealrun::run {
namespace {

using Names = std::vector<std::string>;

const Names kAll = {"hostname", "umask",     "locale",      "timezone",     "build_path",
                    "num_cpus", "user_id",   "time",        "fileordering", "kernel",
                    "aslr",     "exec_path", "domain_host", "home"};

bool has(const Names& set, const std::string& name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

struct Case {
  const char* name;
  Names varied;
  std::function<bool(const Names&)> differs;  // the fake build's outputs under these variations
  Names causes;
  Names together;
  bool without_variation;
  size_t max_rebuilds;
};

class FindCausesTest : public ::testing::TestWithParam<Case> {};

TEST_P(FindCausesTest, FindsTheVariationsThatAloneMakeADifference) {
  const Case& c = GetParam();
  Names seen_sets;
  auto found = find_causes(c.varied, [&](const Names& names) -> Result<CauseProbe> {
    CauseProbe p;
    p.differs = c.differs(names);
    p.id = "probe";
    return p;
  });
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->causes, c.causes);
  EXPECT_EQ(found->together, c.together);
  EXPECT_EQ(found->differs_without_variation, c.without_variation);
  EXPECT_LE(found->probes.size(), c.max_rebuilds);
  // Every cause was seen to differ alone.
  for (const auto& cause : found->causes) {
    bool alone = false;
    for (const auto& p : found->probes)
      if (p.variations == Names{cause} && p.differs) alone = true;
    EXPECT_TRUE(alone || c.varied.size() == 1) << cause;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, FindCausesTest,
    ::testing::Values(Case{"OneAmongFourteen",
                           kAll,
                           [](const Names& s) { return has(s, "timezone"); },
                           {"timezone"},
                           {},
                           false,
                           8},
                      Case{
                          "TwoAmongFourteenSorted",
                          kAll,
                          [](const Names& s) { return has(s, "timezone") || has(s, "build_path"); },
                          {"build_path", "timezone"},
                          {},
                          false,
                          14},
                      Case{"TheLastOne",
                           kAll,
                           [](const Names& s) { return has(s, "home"); },
                           {"home"},
                           {},
                           false,
                           8},
                      Case{"OneVariationIsItsOwnCause",
                           {"umask"},
                           [](const Names&) { return true; },
                           {"umask"},
                           {},
                           false,
                           0},
                      Case{"NoVariationMeansNotDeterministic",
                           {},
                           [](const Names&) { return true; },
                           {},
                           {},
                           true,
                           0},
                      Case{"OnlyTogether",
                           {"hostname", "umask"},
                           [](const Names& s) { return has(s, "hostname") && has(s, "umask"); },
                           {},
                           {"hostname", "umask"},
                           false,
                           2},
                      Case{"EveryOneAloneButAlsoNone",
                           {"hostname", "umask", "locale"},
                           [](const Names&) { return true; },
                           {},
                           {},
                           true,
                           5},
                      Case{"EveryOneAloneAndNotWithoutThem",
                           {"hostname", "umask", "locale"},
                           [](const Names& s) { return !s.empty(); },
                           {"hostname", "locale", "umask"},
                           {},
                           false,
                           5}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(FindCauses, AFailedSearchRebuildIsAnErrorNamingIt) {
  auto found = find_causes({"hostname", "umask"}, [](const Names&) -> Result<CauseProbe> {
    return Error::make("the rebuild x-c1 could not be read");
  });
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message().find("x-c1"), std::string::npos);
}

TEST(FindCauses, TextAndJsonNameTheCausesSorted) {
  CauseSearch s;
  s.causes = {"build_path", "timezone"};
  s.probes = {{{"timezone"}, true, "r-c1", ""}, {{"build_path"}, true, "r-c2", "did not build"}};
  std::string text = causes_text(s);
  EXPECT_NE(text.find("differs under: build_path, timezone\n"), std::string::npos) << text;
  EXPECT_NE(text.find("r-c2 under build_path: differs (did not build)"), std::string::npos) << text;
  auto j = causes_json(s);
  EXPECT_EQ(j["causes"], nlohmann::json({"build_path", "timezone"}));
  EXPECT_EQ(j["cause_rebuilds"].size(), 2u);
  EXPECT_EQ(j["cause_rebuilds"][1]["note"], "did not build");
  EXPECT_FALSE(j.contains("together"));
}

}  // namespace
}  // namespace sealrun::run
