// SPDX-License-Identifier: Apache-2.0
#include "core/result.h"

#include <gtest/gtest.h>

namespace sealrun {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Error::make("not positive");
  return v;
}

Result<int> doubled(int v) {
  int x = SEALRUN_TRY_CTX(parse_positive(v), "doubling");
  return 2 * x;
}

TEST(Result, CarriesValueOrError) {
  auto good = doubled(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "doubling: not positive");
}

TEST(Error, ErrnoIsCapturedOnceAndRenderedLast) {
  errno = ENOENT;
  Error e = Error::from_errno("open /x");
  errno = 0;
  e.context("read admission");
  EXPECT_EQ(e.err(), ENOENT);
  EXPECT_EQ(e.message(), "read admission: open /x: No such file or directory");
}

TEST(Status, VoidResultContext) {
  Status ok = ok_status();
  EXPECT_TRUE(ok.ok());
  Status bad = Status(Error::make("inner")).context("outer");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "outer: inner");
}

}  // namespace
}  // namespace sealrun
