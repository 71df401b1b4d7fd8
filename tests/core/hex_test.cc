// SPDX-License-Identifier: Apache-2.0
#include "core/hex.h"

#include <gtest/gtest.h>

namespace sealrun {
namespace {

TEST(Hex, RoundTrip) {
  std::string bytes("\x00\x01\xab\xff", 4);
  EXPECT_EQ(to_hex(bytes), "0001abff");
  EXPECT_EQ(from_hex("0001ABff"), bytes);
  EXPECT_FALSE(from_hex("abc").has_value());
  EXPECT_FALSE(from_hex("zz").has_value());
}

TEST(Hex, Sha256Shape) {
  EXPECT_TRUE(is_sha256_hex(std::string(64, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'A')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace sealrun
