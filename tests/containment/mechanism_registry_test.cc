// SPDX-License-Identifier: Apache-2.0
// The mechanism registry: every known kind has a factory that makes that kind, names round-trip,
// and the candidates of a run are strongest first, with requests that must agree with the
// admission and with what the job needs (an image for podman).
#include "containment/mechanism_registry.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "containment/spec.h"
#include "containment/view_plan.h"

namespace sealrun {
namespace {

using Kinds = std::vector<MechanismKind>;

// The mechanism of a known kind (a failure to make one fails the test).
std::unique_ptr<Mechanism> made(MechanismKind kind, const MechanismContext& context) {
  auto m = make_mechanism(kind, context);
  EXPECT_TRUE(m.ok()) << m.error().message();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(MechanismRegistry, EveryKindIsMadeAndNamedRoundTrip) {
  EXPECT_EQ(all_mechanisms().size(), kMechanismKinds.size());
  for (MechanismKind kind : kMechanismKinds) {
    auto made = make_mechanism(kind, MechanismContext{});
    ASSERT_TRUE(made.ok()) << made.error().message();
    auto& m = *made;
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind(), kind);
    EXPECT_EQ(m->name(), mechanism_kind_name(kind));
    EXPECT_EQ(parse_mechanism_kind(mechanism_kind_name(kind)), kind);
  }
  EXPECT_FALSE(parse_mechanism_kind("docker").has_value());
  EXPECT_FALSE(parse_mechanism_kind("auto").has_value());
  EXPECT_EQ(mechanism_kind_names(), "bwrap, podman");
}

TEST(MechanismRegistry, AnUnknownKindIsAnErrorNotAnotherMechanism) {
  auto made = make_mechanism(static_cast<MechanismKind>(99), MechanismContext{});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message().find("known: bwrap, podman"), std::string::npos)
      << made.error().message();
  auto asked = mechanism_candidates(false, std::nullopt, static_cast<MechanismKind>(99));
  EXPECT_FALSE(asked.ok());
}

// What the controller asks of a mechanism instead of comparing its name (docs/architecture.md).
TEST(MechanismRegistry, EachMechanismSaysHowARunIsPrepared) {
  auto bwrap = made(MechanismKind::kBwrap, MechanismContext{});
  auto podman = made(MechanismKind::kPodman, MechanismContext{});
  EXPECT_EQ(bwrap->view_root(), ViewRoot::kEmptyTmpfs);
  EXPECT_EQ(podman->view_root(), ViewRoot::kImage);
  EXPECT_TRUE(bwrap->unpacks_image());
  EXPECT_FALSE(podman->unpacks_image());
  EXPECT_TRUE(bwrap->serves_pins_from_images());
  // Podman only from a private mount namespace (podman_pins.h), which this test never enters.
  EXPECT_FALSE(podman->serves_pins_from_images());
  EXPECT_TRUE(bwrap->has_sandbox_ready_hook());
  EXPECT_FALSE(podman->has_sandbox_ready_hook());
  EXPECT_EQ(learning_mechanisms(MechanismContext{}), Kinds{MechanismKind::kBwrap});
}

// The bwrap binary a test substitutes comes from the context, never from the environment.
TEST(MechanismRegistry, TheTestBwrapComesFromTheContext) {
  ::setenv("SEALRUN_TEST_BWRAP", "/nonexistent/from-env/bwrap", 1);
  auto from_env = made(MechanismKind::kBwrap, MechanismContext{})->probe();
  ::unsetenv("SEALRUN_TEST_BWRAP");
  EXPECT_EQ(from_env.path.find("/nonexistent/"), std::string::npos) << from_env.path;
  MechanismContext c;
  c.test_bwrap_path = "/nonexistent/from-context/bwrap";
  auto from_context = made(MechanismKind::kBwrap, c)->probe();
  EXPECT_FALSE(from_context.available);
  const bool named =
      from_context.path.find("/nonexistent/from-context/") != std::string::npos ||
      from_context.unavailable_reason.find("/nonexistent/from-context/") != std::string::npos;
  EXPECT_TRUE(named) << from_context.path << ": " << from_context.unavailable_reason;
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
  auto podman = made(MechanismKind::kPodman, MechanismContext{});
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
  auto bwrap = made(MechanismKind::kBwrap, MechanismContext{});
  EXPECT_TRUE(bwrap->journal_locators(spec).empty());
  EXPECT_TRUE(bwrap->sweep_leftovers({"r1", "/state/owned/r1", "", {}}).empty());
}

}  // namespace
}  // namespace sealrun
