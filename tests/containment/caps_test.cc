// SPDX-License-Identifier: Apache-2.0
// parse_security_status(): the /proc/<pid>/status fields the probe and the tests rely on.
#include "containment/caps.h"

#include <gtest/gtest.h>

namespace sealrun {
namespace {

constexpr const char* kJob =
    "Name:\tsh\nUid:\t1001\t1001\t1001\t1001\nCapInh:\t0000000000000000\n"
    "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
    "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";

TEST(SecurityStatus, EmptySetsAndNoNewPrivs) {
  auto s = parse_security_status(kJob);
  EXPECT_TRUE(s.no_capabilities());
  EXPECT_EQ(s.no_new_privs, 1);
  EXPECT_EQ(s.seccomp, 2);  // not confused with Seccomp_filters
  EXPECT_EQ(s.problems(), "");
}

TEST(SecurityStatus, RootLikeProcessIsReported) {
  std::string text = kJob;
  text.replace(text.find("CapBnd:\t0000000000000000"), 24, "CapBnd:\t000001ffffffffff");
  text.replace(text.find("NoNewPrivs:\t1"), 13, "NoNewPrivs:\t0");
  auto s = parse_security_status(text);
  EXPECT_FALSE(s.no_capabilities());
  EXPECT_EQ(s.cap_bnd, 0x1ffffffffffULL);
  EXPECT_NE(s.problems().find("CapBnd 000001ffffffffff"), std::string::npos);
  EXPECT_NE(s.problems().find("NoNewPrivs 0"), std::string::npos);
}

TEST(SecurityStatus, MissingFieldsAreNotTakenAsZero) {
  auto s = parse_security_status("Name:\tx\n");
  EXPECT_FALSE(s.no_capabilities());
  EXPECT_NE(s.problems().find("CapEff missing"), std::string::npos);
}

TEST(SecurityStatus, OwnCapabilitiesThroughLibcap) {
  auto text = own_capabilities_text();
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_FALSE(text->empty());
}

}  // namespace
}  // namespace sealrun
