// SPDX-License-Identifier: Apache-2.0
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

// A file system of its own never lets the byte figure reach the limit: "full" is read from the
// room statfs reports, and names the owned limit with the observed figure.
TEST(Guards, AFullOwnedFileSystemTripsTheOwnedGuards) {
  GuardLimits l;
  l.free_min_bytes = 0;
  Sample roomy;
  roomy.owned_bytes = 5 << 20;
  roomy.owned_room_bytes = 2 << 20;
  roomy.owned_room_inodes = 10;
  EXPECT_FALSE(evaluate_guards(l, roomy).has_value());

  Sample full = roomy;
  full.owned_room_bytes = 4096;
  auto trip = evaluate_guards(l, full);
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_bytes");
  EXPECT_EQ(trip->observed, 5u << 20);
  EXPECT_NE(trip->describe().find("owned space full"), std::string::npos) << trip->describe();

  Sample no_inodes = roomy;
  no_inodes.owned_inodes = 1000;
  no_inodes.owned_room_inodes = 0;
  trip = evaluate_guards(l, no_inodes);
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_inodes");
  EXPECT_EQ(trip->observed, 1000u);
}

TEST(Guards, TheInodeLimitTripsAtItsBoundary) {
  GuardLimits l;
  l.free_min_bytes = 0;
  l.owned_max_inodes = 500;
  Sample s;
  s.owned_inodes = 499;
  EXPECT_FALSE(evaluate_guards(l, s).has_value());
  s.owned_inodes = 500;
  auto trip = evaluate_guards(l, s);
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->name, "owned_max_inodes");
}

}  // namespace
}  // namespace sealrun::census
