// SPDX-License-Identifier: Apache-2.0
// The mechanism registry: every known kind has a factory that makes that kind, names round-trip,
// and the candidates of a run are strongest first, with requests that must agree with the
// admission and with what the job needs (an image for podman).
#include "containment/mechanism_registry.h"

#include <gtest/gtest.h>

#include "containment/spec.h"

namespace sealrun {
namespace {

using Kinds = std::vector<MechanismKind>;

TEST(MechanismRegistry, EveryKindIsMadeAndNamedRoundTrip) {
  EXPECT_EQ(all_mechanisms().size(), kMechanismKinds.size());
  for (MechanismKind kind : kMechanismKinds) {
    auto m = make_mechanism(kind, MechanismContext{});
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind(), kind);
    EXPECT_EQ(m->name(), mechanism_kind_name(kind));
    EXPECT_EQ(parse_mechanism_kind(mechanism_kind_name(kind)), kind);
  }
  EXPECT_FALSE(parse_mechanism_kind("docker").has_value());
  EXPECT_FALSE(parse_mechanism_kind("auto").has_value());
  EXPECT_EQ(mechanism_kind_names(), "bwrap, podman");
}

TEST(MechanismRegistry, CandidatesStrongestFirst) {
  EXPECT_EQ(*mechanism_candidates(false, std::nullopt, std::nullopt), Kinds{MechanismKind::kBwrap});
  EXPECT_EQ(*mechanism_candidates(true, std::nullopt, std::nullopt),
            (Kinds{MechanismKind::kPodman, MechanismKind::kBwrap}));
}

TEST(MechanismRegistry, RequestsMustAgreeWithTheAdmissionAndTheJob) {
  auto no_image = mechanism_candidates(false, std::nullopt, MechanismKind::kPodman);
  ASSERT_FALSE(no_image.ok());
  EXPECT_NE(no_image.error().message().find("pins no image"), std::string::npos);
  auto disagree = mechanism_candidates(true, MechanismKind::kBwrap, MechanismKind::kPodman);
  ASSERT_FALSE(disagree.ok());
  EXPECT_NE(disagree.error().message().find("allows only bwrap"), std::string::npos);
  EXPECT_EQ(*mechanism_candidates(true, MechanismKind::kBwrap, std::nullopt),
            Kinds{MechanismKind::kBwrap});
  EXPECT_EQ(*mechanism_candidates(true, std::nullopt, MechanismKind::kBwrap),
            Kinds{MechanismKind::kBwrap});
  EXPECT_FALSE(mechanism_candidates(false, MechanismKind::kPodman, std::nullopt).ok());
}

TEST(MechanismRegistry, PodmanRecordsWhereSweepFindsItsLeftoversAndRefusesForeignOnes) {
  auto podman = make_mechanism(MechanismKind::kPodman, MechanismContext{});
  ContainmentSpec spec;
  spec.run_id = "r1";
  spec.owned_root = "/state/owned/r1";
  auto locators = podman->journal_locators(spec);
  EXPECT_FALSE(locators.empty());
  // A record whose locators point elsewhere than this run's own storage is refused, untouched.
  auto forged = locators;
  for (auto& [key, value] : forged) value = "/elsewhere/" + key;
  auto steps = podman->sweep_leftovers({"r1", "/state/owned/r1", "", forged});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].left);
  EXPECT_NE(steps[0].outcome.find("refused"), std::string::npos);
  // bwrap keeps nothing outside the owned root: nothing to sweep.
  auto bwrap = make_mechanism(MechanismKind::kBwrap, MechanismContext{});
  EXPECT_TRUE(bwrap->journal_locators(spec).empty());
  EXPECT_TRUE(bwrap->sweep_leftovers({"r1", "/state/owned/r1", "", {}}).empty());
}

}  // namespace
}  // namespace sealrun
