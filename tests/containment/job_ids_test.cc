// SPDX-License-Identifier: Apache-2.0
// The pure parts of a run's own uid (containment/job_ids.h): finding the job user's line in
// /etc/subuid text, the slice of the range that holds run slots, and the FIRST:COUNT pool a site
// or a test configures. Allocation itself (the registry, the ids in use) is proven by real runs in
// tests/controller/run_job_ids_test.cc.
#include "containment/job_ids.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sealrun {
namespace {

struct RangeCase {
  const char* what;
  const char* text;
  std::optional<SubidRange> want;  // nullopt: an error naming the file and the user
};

TEST(FindSubidRange, TakesTheFirstWellFormedLineOfTheUserByNameOrId) {
  const RangeCase cases[] = {
      {"by name", "alice:100000:65536\nsealrun:200000:65536\n", SubidRange{200000, 65536}},
      {"by id", "alice:100000:65536\n998:300000:4096\n", SubidRange{300000, 4096}},
      {"first of two", "sealrun:200000:65536\nsealrun:400000:65536\n", SubidRange{200000, 65536}},
      {"no newline at the end", "sealrun:5:4096", SubidRange{5, 4096}},
      {"comments skipped", "# sealrun:1:4096\nsealrun:7:4096\n", SubidRange{7, 4096}},
      {"malformed skipped", "sealrun:x:4096\nsealrun:9\nsealrun:1:0\nsealrun:11:4096\n",
       SubidRange{11, 4096}},
      {"a prefix is not the name", "sealrunner:1:65536\n", std::nullopt},
      {"signs are not digits", "sealrun:-1:65536\nsealrun:+1:65536\n", std::nullopt},
      {"another user only", "alice:100000:65536\n", std::nullopt},
      {"empty file", "", std::nullopt},
      {"blank lines only", "\n\n\n", std::nullopt},
  };
  for (const auto& c : cases) {
    auto r = find_subid_range(c.text, "sealrun", 998, "/etc/subuid");
    if (!c.want) {
      ASSERT_FALSE(r.ok()) << c.what;
      EXPECT_NE(r.error().message().find("/etc/subuid gives the job user sealrun"),
                std::string::npos)
          << c.what << ": " << r.error().message();
      continue;
    }
    ASSERT_TRUE(r.ok()) << c.what << ": " << r.error().message();
    EXPECT_EQ(r->start, c.want->start) << c.what;
    EXPECT_EQ(r->count, c.want->count) << c.what;
  }
}

TEST(SlotSlice, LiesAboveHalfTheRangeAndBelowTheTopReserve) {
  auto s = slot_slice(65536);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->first, 32768u);
  EXPECT_EQ(s->first + s->count, 65536u - 1024u);  // nobody and nogroup (65534) stay out
  auto smallest = slot_slice(4096);
  ASSERT_TRUE(smallest.ok());
  EXPECT_EQ(smallest->first, 2048u);
  EXPECT_EQ(smallest->count, 4096u - 1024u - 2048u);
  auto small = slot_slice(4095);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message().find("holds 4095 ids"), std::string::npos)
      << small.error().message();
}

struct PoolCase {
  const char* spec;
  bool ok;
  uint64_t first = 0, count = 0;
};

TEST(ParsePoolSpec, AcceptsOnlyFirstColonAPositiveCount) {
  const PoolCase cases[] = {
      {"0:1", true, 0, 1},
      {"100:50", true, 100, 50},
      {"7:30000", true, 7, 30000},
      {"", false},
      {":", false},
      {"5", false},
      {"5:", false},
      {":5", false},
      {"5:0", false},
      {"-1:5", false},
      {"5:-1", false},
      {"a:b", false},
      {"5:5:5", false},
      {" 5:5", false},
      {"5:5 ", false},
      {"99999999999999999999999:1", false},
  };
  for (const auto& c : cases) {
    auto r = parse_pool_spec(c.spec);
    ASSERT_EQ(r.ok(), c.ok) << '"' << c.spec << '"';
    if (!c.ok) {
      EXPECT_NE(r.error().message().find(std::string("\"") + c.spec + "\" is not FIRST:COUNT"),
                std::string::npos)
          << r.error().message();
      continue;
    }
    EXPECT_EQ(r->first, c.first) << c.spec;
    ASSERT_TRUE(r->count.has_value()) << c.spec;
    EXPECT_EQ(*r->count, c.count) << c.spec;
    EXPECT_TRUE(r->invalid.empty());
    EXPECT_EQ(r->registry, kDefaultJobIdRegistry);
  }
}

}  // namespace
}  // namespace sealrun
