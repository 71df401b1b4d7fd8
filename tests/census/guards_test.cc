#include "census/guards.h"

#include <gtest/gtest.h>

namespace sealrun::census {
namespace {

TEST(Guards, EachGuardTripsAtItsBoundaryAndNotBefore) {
  GuardLimits l{.owned_max_bytes = 1000,
                .result_max_bytes = 100,
                .free_min_bytes = 50,
                .ceiling_bytes = 2000,
                .reserve_bytes = 500};
  struct Case {
    Sample s;
    const char* tripped;  // nullptr: none
  } cases[] = {
      {{0, 999, 99, 50}, nullptr},
      {{0, 1000, 0, 1000}, "owned_max_bytes"},
      {{0, 0, 100, 1000}, "result_max_bytes"},
      {{0, 0, 0, 49}, "free_min_bytes"},
      {{0, 999, 99, 1000}, nullptr},  // 999 + 99 + 500 = 1598 <= 2000
  };
  for (const auto& c : cases) {
    auto trip = evaluate_guards(l, c.s);
    if (c.tripped == nullptr) {
      EXPECT_FALSE(trip.has_value()) << trip->describe();
    } else {
      ASSERT_TRUE(trip.has_value()) << c.tripped;
      EXPECT_EQ(trip->name, c.tripped);
    }
  }
  GuardLimits tight = l;
  tight.ceiling_bytes = 1500;
  auto trip = evaluate_guards(tight, {0, 900, 99, 1000});  // 900 + 99 + 500 = 1499: fine
  EXPECT_FALSE(trip.has_value());
  trip = evaluate_guards(tight, {0, 950, 99, 1000});  // 1549 > 1500
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "ceiling_bytes");
  EXPECT_EQ(trip->observed, 1549u);
}

TEST(Decimate, KeepsFirstLastAndPeaks) {
  std::vector<Sample> s;
  for (int i = 0; i < 1000; ++i)
    s.push_back({i, static_cast<uint64_t>(i == 500 ? 1'000'000 : i),
                 static_cast<uint64_t>(i == 700 ? 99999 : 1),
                 static_cast<uint64_t>(i == 300 ? 1 : 1'000'000)});
  uint64_t dropped = decimate_samples(s, 10);
  EXPECT_EQ(s.size(), 10u);
  EXPECT_EQ(dropped, 990u);
  auto has_t = [&](int t) {
    for (const auto& x : s)
      if (x.t_ms == t) return true;
    return false;
  };
  EXPECT_TRUE(has_t(0));
  EXPECT_TRUE(has_t(999));
  EXPECT_TRUE(has_t(500));                                                    // owned peak
  EXPECT_TRUE(has_t(700));                                                    // result peak
  EXPECT_TRUE(has_t(300));                                                    // lowest free space
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].t_ms, s[i].t_ms);  // order kept
}

}  // namespace
}  // namespace sealrun::census
