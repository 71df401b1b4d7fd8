// SPDX-License-Identifier: Apache-2.0
#include "core/dimension.h"

#include <gtest/gtest.h>

namespace sealrun {
namespace {

TEST(Dimension, NamesRoundTripAndUnknownIsRejected) {
  for (auto d : DimensionSet::all().list()) EXPECT_EQ(parse_dimension(dimension_name(d)), d);
  EXPECT_FALSE(parse_dimension("gpu").has_value());
  EXPECT_FALSE(parse_dimension("").has_value());
}

TEST(DimensionSet, SetAlgebraAndStableOrder) {
  DimensionSet a{Dimension::kNetwork, Dimension::kMemory};
  DimensionSet b{Dimension::kMemory};
  EXPECT_TRUE(b.subset_of(a));
  EXPECT_FALSE(a.subset_of(b));
  EXPECT_EQ((a - b).joined(), "network");
  EXPECT_EQ((a | b).joined(), "network, memory");
  EXPECT_EQ(DimensionSet::all().list().size(), 8u);
}

}  // namespace
}  // namespace sealrun
