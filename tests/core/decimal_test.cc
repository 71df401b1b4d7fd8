// SPDX-License-Identifier: Apache-2.0
// core/decimal.h: only a whole, in-range, non-negative decimal is a number.
#include "core/decimal.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace sealrun {
namespace {

TEST(ParseDecimal, OnlyAWholeInRangeDecimalIsANumber) {
  struct Case {
    std::string_view text;
    std::optional<uint64_t> want;
  };
  const Case cases[] = {
      {"0", 0},
      {"200000", 200000},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", std::nullopt},  // one past the top
      {"", std::nullopt},
      {"-1", std::nullopt},
      {"+1", std::nullopt},
      {" 1", std::nullopt},
      {"1 ", std::nullopt},
      {"12a", std::nullopt},
      {"0x10", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(parse_decimal<uint64_t>(c.text), c.want) << c.text;
  EXPECT_EQ(parse_decimal<uint16_t>("65535"), std::optional<uint16_t>(65535));
  EXPECT_EQ(parse_decimal<uint16_t>("65536"), std::nullopt);
}

}  // namespace
}  // namespace sealrun
